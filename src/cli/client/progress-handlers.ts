import { stateName, type ClientEvent } from "../../sdk/blockx-client";
import type { Progress } from "../../sdk/core/progress";
import type { TaskSnapshot } from "../../gen/worker/v1/worker";
import { ProgressDisplay } from "./progress-display";

/**
 * progressHandlers connects the SDK's progress and events to a ProgressDisplay on stderr (so
 * stdout stays the result), and tells the person when the Worker was lost and the task rerun.
 */
export function progressHandlers(json: boolean) {
  const display = new ProgressDisplay(process.stderr);
  let attempt = 1;
  return {
    display,
    onProgress: (progress: Progress, snapshot: TaskSnapshot) => display.update({ progress, state: stateName(snapshot.state), attempt }),
    onEvent: (e: ClientEvent) => {
      if (e.kind === "submitted") {
        attempt = e.attempt;
        if (!json && attempt === 1) process.stderr.write(`submitted to ${e.workerAddr}\n`);
      }
      if (e.kind === "workerLost") {
        display.finish();
        process.stderr.write(`worker ${e.workerAddr} lost (${e.reason})${e.resubmit ? "; resubmitting" : ""}\n`);
      }
    },
  };
}
