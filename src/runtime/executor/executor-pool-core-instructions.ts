/**
 * ExecutorPoolInstruction is work ExecutorPoolCore hands back for the ExecutorPool to do, in the
 * imperative. The union is closed. Each names the slot `index` and the `executorId` of the
 * incarnation it is about (`${index}.${generation}`), so the adapter can tell a stale instruction
 * from a current one. The adapter carries them out in order.
 */
export type ExecutorPoolInstruction = KillHungExecutor | KillExecutor | StartExecutor | PingExecutor | SendCall | ScheduleRestart | RecycleExecutor | SampleMemory;

/**
 * SampleMemory: read the resident memory of every live executor's process tree now and report
 * each as memorySampled (the pool's one periodic IO; the core judges the figures).
 */
export interface SampleMemory {
  readonly type: "sampleMemory";
  /** SampleMemory concerns no one slot; -1 keeps the instructions' shape. */
  readonly index: -1;
  readonly executorId: "";
}

/**
 * RecycleExecutor: the idle executor served another owner; calls of a new owner wait for it. Kill
 * it (it holds no calls); the slot starts a fresh incarnation at the next timeAdvanced, without
 * backoff (it did not fail). Nothing an owner's code left in the interpreter (modules, linecache,
 * globals, threads) reaches the next owner.
 */
export interface RecycleExecutor {
  readonly type: "recycleExecutor";
  readonly index: number;
  readonly executorId: string;
}

/**
 * KillHungExecutor: the executor did not say Hello within the start timeout, or has not been heard
 * from within the ping timeout. Kill it (its calls fail as EXECUTOR_HUNG); report executorDied.
 */
export interface KillHungExecutor {
  readonly type: "killHungExecutor";
  readonly index: number;
  readonly executorId: string;
  readonly cause: "NO_HELLO" | "NO_PONG";
}

/**
 * KillExecutor: the executor went over its memory limit (OVER_MEMORY: `rssBytes`), or one of its
 * calls ran past the wall-clock ceiling (WALL_CLOCK: `callId`, `ranMs`). Kill it (its calls fail
 * as OOM_KILLED, or the overrunning one as WALL_CLOCK_EXCEEDED); report executorDied. Given once
 * per incarnation.
 */
export type KillExecutor = {
  readonly type: "killExecutor";
  readonly index: number;
  readonly executorId: string;
} & ({ readonly cause: "OVER_MEMORY"; readonly rssBytes: number } | { readonly cause: "WALL_CLOCK"; readonly callId: string; readonly ranMs: number });

/** StartExecutor: spawn a new executor for the slot, with this id; the slot is STARTING from now on. */
export interface StartExecutor {
  readonly type: "startExecutor";
  readonly index: number;
  readonly executorId: string;
}

/** PingExecutor: send a Ping to the READY executor. */
export interface PingExecutor {
  readonly type: "pingExecutor";
  readonly index: number;
  readonly executorId: string;
}

/** SendCall: send the call to this executor (ExecuteCall); it counts against the executor from now on. */
export interface SendCall {
  readonly type: "sendCall";
  readonly callId: string;
  readonly index: number;
  readonly executorId: string;
}

/**
 * ScheduleRestart: the slot's executor is down and may start again at `restartAtMs` (exponential
 * backoff); the first timeAdvanced at or after that returns its startExecutor (the decision's
 * wakeAtMs covers it); the adapter logs it.
 */
export interface ScheduleRestart {
  readonly type: "scheduleRestart";
  readonly index: number;
  readonly executorId: string;
  readonly restartAtMs: number;
}
