import type { CallPool } from "../../runtime/calls/call-owner";

/** TaskCallTimes of one task: calls ended in the pool (every attempt) and the seconds they took there. */
export interface CallTimes {
  readonly calls: number;
  readonly seconds: number;
}

/** How many tasks' times are kept at most; the task first timed longest ago goes first. */
export const MAX_TIMED_TASKS = 10_000;

/**
 * TaskCallTimes sums each task's call times as the executor pool reports them: `wrap` returns the
 * pool with every call of a task (id `<task id>/<index>/<attempt>`) counted when its outcome comes
 * back, whatever the outcome, with the outcome's `totalMs` (from the pool taking it to its outcome,
 * its wait for an executor's turn included: where a backfill queues, that is what grows).
 * Sub-calls (`<call id>/sub-<n>`) run inside their parent's time and are not counted again.
 * ListTasks reports the sums (`calls_timed`, `call_seconds`), from which a reader derives the mean
 * call latency between two answers: a task's latency without a task id as a metric label. Keeps
 * the last MAX_TIMED_TASKS tasks (far more than a Worker retains results of).
 */
export class TaskCallTimes {
  private readonly byTask = new Map<string, { calls: number; seconds: number }>();

  constructor(private readonly maxTasks = MAX_TIMED_TASKS) {}

  wrap(pool: CallPool): CallPool {
    return {
      execute: async (request, owner) => {
        const outcome = await pool.execute(request, owner);
        const parts = request.callId.split("/");
        if (parts.length === 3) this.record(parts[0]!, outcome.totalMs / 1000);
        return outcome;
      },
      cancel: (callId, reason) => pool.cancel(callId, reason),
    };
  }

  /** of: the task's times so far, or undefined for a task none of whose calls has ended here. */
  of(taskId: string): CallTimes | undefined {
    const t = this.byTask.get(taskId);
    return t === undefined ? undefined : { ...t };
  }

  private record(taskId: string, seconds: number): void {
    let t = this.byTask.get(taskId);
    if (t === undefined) {
      if (this.byTask.size >= this.maxTasks) this.byTask.delete(this.byTask.keys().next().value!);
      t = { calls: 0, seconds: 0 };
      this.byTask.set(taskId, t);
    }
    t.calls++;
    t.seconds += Math.max(0, seconds);
  }
}
