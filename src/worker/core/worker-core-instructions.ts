import type { Decision } from "../../common/core/decision";
import type { TaskSnapshot } from "../../gen/worker/v1/worker";
import type { WorkerError } from "./worker-error";
import type { RpcEventType, WorkerEvent } from "./worker-core-events";

/**
 * WorkerInstruction is work WorkerCore hands back for the adapter to do, in the imperative. The
 * union is closed. The adapter executes the instructions of one decision in order, and must not
 * feed events back into the core while it is doing so (queue them instead): the core is not
 * re-entrant.
 */
export type WorkerInstruction = StartTask | StopTask | PublishSnapshot | ForgetTask | ReportDrained;

/**
 * StartTask: run the task's pipeline (BUILD, then EXECUTE and WRITE) with `deadlineMs` as its
 * deadline. Emitted exactly once per accepted task, and only in the decision of the taskSubmitted
 * event for that same task, so the adapter always has the full Task protobuf in hand. The adapter
 * reports progress and the outcome back as taskPhaseEntered / taskCallCountsChanged /
 * taskSucceeded / taskFailed.
 */
export interface StartTask {
  readonly type: "startTask";
  readonly taskId: string;
  readonly slotId: string;
  /** The effective timeout (0 already replaced by the default). */
  readonly timeoutMs: number;
  readonly deadlineMs: number;
}

/**
 * StopTask: stop the task's calls and writes now and release what it holds. The core already
 * considers the task terminal and its slot free; anything the pipeline reports afterwards is
 * ignored. Only for tasks that were started (a task cancelled while ALLOCATED gets none).
 */
export interface StopTask {
  readonly type: "stopTask";
  readonly taskId: string;
  readonly slotId: string;
  readonly reason: "CANCELLED" | "TIMED_OUT";
  readonly message: string;
}

/** PublishSnapshot: the task's snapshot changed; send it to its WatchTasks streams. */
export interface PublishSnapshot {
  readonly type: "publishSnapshot";
  readonly snapshot: TaskSnapshot;
}

/**
 * ForgetTask: the core dropped the task id; drop whatever the adapter keeps for it (results,
 * watchers, the Task protobuf). SLOT_EXPIRED: an ALLOCATED slot's TTL ran out without SubmitTask
 * (nothing was ever accepted). RETENTION_EXPIRED: a terminal task's retention ran out.
 */
export interface ForgetTask {
  readonly type: "forgetTask";
  readonly taskId: string;
  readonly slotId: string;
  /** RETENTION_EVICTED: forgotten before its retention ended, the oldest ended task over the Worker's retained bounds. */
  readonly reason: "SLOT_EXPIRED" | "RETENTION_EXPIRED" | "RETENTION_EVICTED";
}

/**
 * ReportDrained: the Worker is draining and no slot is ALLOCATED or RUNNING any more; shutdown may
 * proceed. Emitted once, at the step where that first becomes true (possibly drainingStarted itself).
 */
export interface ReportDrained {
  readonly type: "reportDrained";
}

/**
 * SnapshotReply is the answer to a client request: the task's snapshot, or the WorkerError that the
 * adapter turns into a gRPC status. Shaped like CoordinatorCore's CandidateResult.
 */
export type SnapshotReply = { snapshot: TaskSnapshot; err?: undefined } | { snapshot?: undefined; err: WorkerError };

/**
 * IgnoreReason says why an event changed nothing. These are expected races (the pipeline reports
 * on a task that was just cancelled or timed out) or adapter mistakes worth a warning; the core
 * never throws for them, the adapter logs them.
 */
export type IgnoreReason =
  | "UNKNOWN_TASK"
  | "TASK_ALREADY_TERMINAL"
  | "TASK_NOT_STARTED"
  | "PHASE_NOT_FORWARD"
  | "COUNTS_WENT_BACKWARDS";

export interface IgnoredEvent {
  readonly reason: IgnoreReason;
  readonly message: string;
}

/** ReplyOf is the reply type of an event: SnapshotReply for client requests, undefined otherwise. */
export type ReplyOf<E extends WorkerEvent> = E extends { readonly type: RpcEventType } ? SnapshotReply : undefined;

/**
 * WorkerDecision is what one step of WorkerCore returns (the cores' one Decision shape).
 * `instructions` first lists what became due by `nowMs` (expired slots, timed-out tasks, forgotten
 * tasks, in deadline order), then what the event itself caused; `reply` answers client requests;
 * `wakeAtMs` is the next slot expiry, task deadline or retention expiry; `note` is set when the
 * event itself changed nothing for a reason worth logging.
 */
export type WorkerDecision<R = SnapshotReply | undefined> = Decision<WorkerInstruction, R> & {
  readonly reply: R;
  readonly note?: IgnoredEvent;
};
