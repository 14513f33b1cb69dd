import { stateName, type ClientEvent, type TaskRef } from "../../sdk/blockx-client";
import type { Progress } from "../../sdk/core/progress";
import type { TaskSnapshot } from "../../gen/worker/v1/worker";
import { ProgressDisplay } from "./progress-display";

/**
 * progressHandlers connects the SDK's progress and events to a ProgressDisplay on stderr (so
 * stdout stays the result). It says `task <id> on <worker>` as soon as the task is submitted
 * (before the bar), tells the person when the Worker was lost and the task rerun, and knows
 * the task's current Worker so that an interrupted CLI can say how to follow or cancel it.
 */
export function progressHandlers(initial: TaskRef | null = null) {
  const display = new ProgressDisplay(process.stderr);
  let attempt = 1;
  let current: TaskRef | null = initial;
  return {
    display,
    /** The task and the Worker running it, once submitted. */
    current: () => current,
    onProgress: (progress: Progress, snapshot: TaskSnapshot) => display.update({ progress, state: stateName(snapshot.state), attempt }),
    onEvent: (e: ClientEvent) => {
      if (e.kind === "submitted") {
        attempt = e.attempt;
        current = { taskId: e.taskId, workerAddr: e.workerAddr };
        process.stderr.write(attempt === 1 ? `task ${e.taskId} on ${e.workerAddr}\n` : `task ${e.taskId} resubmitted to ${e.workerAddr} (attempt ${attempt})\n`);
      }
      if (e.kind === "submitUncertain") {
        current = { taskId: e.taskId, workerAddr: e.workerAddr };
        process.stderr.write(`task ${e.taskId}: ${e.workerAddr} did not answer once it may have taken the task (${e.code}); following it there, not submitting it elsewhere\n`);
      }
      if (e.kind === "attached") {
        current = { taskId: e.taskId, workerAddr: e.runningOn };
        process.stderr.write(`task ${e.taskId} is ${e.state === "RUNNING" ? "running" : e.state} on ${e.runningOn} already; following it there\n`);
      }
      if (e.kind === "submitNotLanded") process.stderr.write(`task ${e.taskId} never reached ${e.workerAddr}; submitting it again\n`);
      if (e.kind === "workerLost") {
        display.finish();
        process.stderr.write(`worker ${e.workerAddr} lost (${e.reason})${e.resubmit ? "; resubmitting" : ""}\n`);
      }
    },
  };
}

/** EXIT_INTERRUPTED: 128 + SIGINT, as shells report a command stopped by Ctrl-C. */
export const EXIT_INTERRUPTED = 130;

/**
 * onInterrupt makes Ctrl-C (SIGINT) or SIGTERM stop following, not the task: the task keeps
 * running on its Worker, and the message says how to watch or cancel it. Returns the remover.
 */
export function onInterrupt(handlers: ReturnType<typeof progressHandlers>): () => void {
  const handler = () => {
    handlers.display.finish();
    const ref = handlers.current();
    process.stderr.write(
      ref
        ? `interrupted: task ${ref.taskId} keeps running on ${ref.workerAddr}\n` +
            `  follow it: blockx watch ${ref.taskId} --worker ${ref.workerAddr}\n` +
            `  cancel it: blockx cancel ${ref.taskId} --worker ${ref.workerAddr}\n`
        : "interrupted before the task was submitted: nothing runs\n",
    );
    process.exit(EXIT_INTERRUPTED);
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
  return () => {
    process.off("SIGINT", handler);
    process.off("SIGTERM", handler);
  };
}
