import { TERMINAL_TASK_STATES } from "../../common/terminal-task-states";
import { MAX_OPEN_SPANS, type Tracer } from "../../common/trace/tracer";
import { TaskPhase, TaskState, type TaskSnapshot } from "../../gen/worker/v1/worker";

/** taskKey: the key a task's span is found under while it lives (its calls hang under it). */
export const taskKey = (taskId: string): string => `task:${taskId}`;

/**
 * TaskTrace follows the snapshots a Worker publishes (WORKER_TRACE): one span per task, from its
 * first snapshot to its terminal one, whose consecutive stages are what the task was doing
 * (ALLOCATED while its slot waits for SubmitTask, then its phases BUILD, EXECUTE, WRITE), so the
 * stages add up to the task. Its calls (tracedPool) and commits (`commit`) hang under it.
 */
export class TaskTrace {
  /** The stage each traced task is in (bounded like the tracer's open spans). */
  private readonly stages = new Map<string, string>();

  constructor(private readonly tracer: Tracer) {}

  snapshot(s: TaskSnapshot): void {
    const key = taskKey(s.taskId);
    let span = this.tracer.open(key);
    if (span === undefined) {
      this.stages.delete(s.taskId);
      if (TERMINAL_TASK_STATES.has(s.state)) return;
      span = this.tracer.span("task", { taskId: s.taskId }, key);
      if (this.stages.size >= MAX_OPEN_SPANS) this.stages.delete(this.stages.keys().next().value!);
    }
    if (TERMINAL_TASK_STATES.has(s.state)) {
      this.stages.delete(s.taskId);
      span.end({ state: TaskState[s.state] ?? String(s.state), callsSucceeded: s.callsSucceeded, callsFailed: s.callsFailed });
      return;
    }
    const stage = s.state === TaskState.ALLOCATED ? "ALLOCATED" : (TaskPhase[s.phase] ?? String(s.phase));
    if (this.stages.get(s.taskId) === stage) return;
    this.stages.set(s.taskId, stage);
    span.stage(stage);
  }

  /** commit traces a call's table commit, from its call's end to the rows being durable. */
  commit(callId: string, done: Promise<unknown>): void {
    const span = this.tracer.open(taskKey(callId.slice(0, callId.indexOf("/"))))?.child("commit", { callId });
    if (span) void done.then(() => span.end());
  }
}
