/**
 * ExecutorPoolInstruction is work ExecutorPoolCore hands back for the ExecutorPool to do, in the
 * imperative. The union is closed. Each names the slot `index` and the `executorId` of the
 * incarnation it is about (`${index}.${generation}`), so the adapter can tell a stale instruction
 * from a current one. The adapter carries them out in order.
 */
export type ExecutorPoolInstruction = KillHungExecutor | StartExecutor | PingExecutor | SendCall | ScheduleRestart;

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
 * backoff); the first timeAdvanced at or after that returns its startExecutor. The adapter's
 * periodic timer covers it; the adapter logs it.
 */
export interface ScheduleRestart {
  readonly type: "scheduleRestart";
  readonly index: number;
  readonly executorId: string;
  readonly restartAtMs: number;
}
