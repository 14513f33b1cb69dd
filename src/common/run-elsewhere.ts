/**
 * The words of a SubmitTask refused because the task id's run is elsewhere (ErrorCode
 * TASK_RUN_ELSEWHERE, gRPC ALREADY_EXISTS), written by the Worker and read by the clients (the
 * TypeScript SDK here, blockx-py with the same pattern): they follow the named Worker instead of
 * running the task a second time.
 */

/** RunElsewhere: where the task's current run is, and its state there. */
export interface RunElsewhere {
  readonly taskId: string;
  readonly workerAddr: string;
  readonly generation: number;
  /** RUNNING, or SUCCEEDED (a finished task is not run again without a resubmission). */
  readonly state: string;
}

/** runElsewhereMessage: the refusal's message; parseRunElsewhere reads it back. */
export function runElsewhereMessage(r: RunElsewhere): string {
  const where = `on ${r.workerAddr} (run ${r.generation})`;
  return r.state === "RUNNING"
    ? `task ${r.taskId} is running ${where}: a task id runs once in the cluster; follow it there, or resubmit it to replace that run`
    : `task ${r.taskId} already ${r.state} ${where}: its result is there; resubmit it to run it again`;
}

/** The pattern blockx-py uses too (client-py/blockx/_run_elsewhere.py). */
export const RUN_ELSEWHERE_PATTERN = /^task (\S+) (?:is (RUNNING|running)|already ([A-Z_]+)) on (\S+) \(run (\d+)\)/;

/** parseRunElsewhere reads a refusal's message (with or without its `[TASK_RUN_ELSEWHERE] ` prefix); null for any other message. */
export function parseRunElsewhere(message: string): RunElsewhere | null {
  const m = RUN_ELSEWHERE_PATTERN.exec(message.replace(/^\[TASK_RUN_ELSEWHERE\] /, ""));
  if (!m) return null;
  return { taskId: m[1]!, state: m[2] ? "RUNNING" : m[3]!, workerAddr: m[4]!, generation: Number(m[5]) };
}
