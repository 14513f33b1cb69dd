import type { TaskPhaseName } from "./task-transitions";

/**
 * WorkerEvent is everything that can happen to WorkerCore: facts, in the past tense, that the
 * adapter feeds through `WorkerCore.handle(event, nowMs)`. The union is closed; `handle` switches
 * over it exhaustively.
 *
 * Four events are client requests (the gRPC adapter's handlers) and get a SnapshotReply:
 * taskSlotRequested, taskSubmitted, taskCancelRequested, taskQueried. The others are reports from
 * the task pipeline and the timer, and get no reply (`reply: undefined`).
 */
export type WorkerEvent =
  | TaskSlotRequested
  | TaskSubmitted
  | TaskCancelRequested
  | TaskQueried
  | TaskPhaseEntered
  | TaskCallCountsChanged
  | TaskSucceeded
  | TaskFailed
  | TaskRetainedSizeKnown
  | DrainingStarted
  | TimeAdvanced;

/** RpcEventType names the events that are client requests and get a SnapshotReply. */
export type RpcEventType = "taskSlotRequested" | "taskSubmitted" | "taskCancelRequested" | "taskQueried";

/**
 * Requester is who asks, as the adapter verified it: `identity` is an identity key from the peer
 * certificate (`client/alice`; for RequestTaskSlot the client a Coordinator reserves for), ""
 * when anonymous (BLOCKX_INSECURE: every caller is the same nobody). `admin` may read and cancel
 * every task. A task belongs to the identity that reserved or submitted it.
 */
export interface Requester {
  readonly identity: string;
  readonly admin: boolean;
}

/** ANONYMOUS is the requester under BLOCKX_INSECURE, and of events that name none. */
export const ANONYMOUS: Requester = Object.freeze({ identity: "", admin: false });

/** A client (usually a Coordinator) called RequestTaskSlot{task_id, ttl_ms}. */
export interface TaskSlotRequested {
  readonly type: "taskSlotRequested";
  readonly taskId: string;
  /**
   * How long the slot stays ALLOCATED without SubmitTask: an integer in 1..MAX_SLOT_TTL_MS, cut
   * to the config's maxSlotTtlMs (which also bounds every extension, counted from allocation).
   */
  readonly ttlMs: number;
  /** Absent: ANONYMOUS. */
  readonly requester?: Requester;
}

/**
 * TaskSpec is the part of a `worker.v1.Task` that WorkerCore needs. The adapter validates the rest
 * of the protobuf (function, call config, outputs) before it hands the core this, and keeps the
 * full Task to start it when the decision says `startTask`.
 */
export interface TaskSpec {
  readonly taskId: string;
  /** task_timeout_ms as sent: 0 means DEFAULT_TASK_TIMEOUT_MS; at most MAX_TASK_TIMEOUT_MS. */
  readonly timeoutMs: number;
}

/** A client called SubmitTask{task, slot_id}; `slotId` is "" when the client sent none. */
export interface TaskSubmitted {
  readonly type: "taskSubmitted";
  readonly task: TaskSpec;
  readonly slotId: string;
  /** Absent: ANONYMOUS. */
  readonly requester?: Requester;
}

/** A client called CancelTask{task_id, reason}. */
export interface TaskCancelRequested {
  readonly type: "taskCancelRequested";
  readonly taskId: string;
  readonly reason: string;
  /** Absent: ANONYMOUS. */
  readonly requester?: Requester;
}

/**
 * A client asked for a task's current snapshot: GetTaskResult, or the first message of WatchTasks
 * for one task id. It changes nothing but lets every due expiry apply first, so the answer is as of
 * `nowMs` (a task whose retention ran out is not found, even if the timer has not fired yet).
 */
export interface TaskQueried {
  readonly type: "taskQueried";
  readonly taskId: string;
  /** Absent: ANONYMOUS. */
  readonly requester?: Requester;
}

/** The pipeline moved a RUNNING task into `phase` (forward only: BUILD -> EXECUTE -> WRITE). */
export interface TaskPhaseEntered {
  readonly type: "taskPhaseEntered";
  readonly taskId: string;
  readonly phase: TaskPhaseName;
}

/**
 * The pipeline's call counters of a RUNNING task changed. The counts are absolute (not deltas), so
 * the adapter may coalesce updates (e.g. at most one per 100 ms) and a repeated event is harmless.
 * Each is a non-negative integer and `callsSucceeded + callsFailed <= callsTotal` (callsRetried
 * counts retry attempts and is not bounded by callsTotal). Counts never decrease: an event with
 * any count below the current one is ignored as out of order.
 */
export interface TaskCallCountsChanged {
  readonly type: "taskCallCountsChanged";
  readonly taskId: string;
  readonly callsTotal: number;
  readonly callsSucceeded: number;
  readonly callsFailed: number;
  readonly callsRetried: number;
}

/** The pipeline finished a RUNNING task successfully (every call done, every output written). */
export interface TaskSucceeded {
  readonly type: "taskSucceeded";
  readonly taskId: string;
}

/**
 * The pipeline gave up on a RUNNING task. `error.code` is a task-level code (e.g. USER_ERROR,
 * EXECUTOR_CRASHED, BUDGET_EXCEEDED); it goes into the snapshot's error as is.
 */
export interface TaskFailed {
  readonly type: "taskFailed";
  readonly taskId: string;
  readonly error: { readonly code: string; readonly message: string };
}

/**
 * The adapter measured what an ended task keeps in memory until it is forgotten (its result's JSON,
 * its log lines, its traceback), in bytes. Counted against retainedBytesMax; when the ended tasks
 * together keep more (or number more than retainedTasksMax), the oldest ended are forgotten first.
 * For a task that is not ended and kept: nothing.
 */
export interface TaskRetainedSizeKnown {
  readonly type: "taskRetainedSizeKnown";
  readonly taskId: string;
  readonly bytes: number;
}

/** The Worker began to drain (SIGTERM): no new slots from now on, for good. */
export interface DrainingStarted {
  readonly type: "drainingStarted";
}

/** The adapter's timer fired (armed at `nextDeadlineMs()`), or the adapter just wants time applied. */
export interface TimeAdvanced {
  readonly type: "timeAdvanced";
}
