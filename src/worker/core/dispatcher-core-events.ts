/**
 * DispatcherEvent is everything the task runner tells DispatcherCore, in the past tense, through
 * `DispatcherCore.handle(event, nowMs)`. The union is closed.
 */
export type DispatcherEvent<C> = TaskAdded<C> | TaskRemoved | CallFinished<C> | SubCallStarted | SubCallFinished | TimeAdvanced;

/**
 * CallSource yields a task's calls in index order, lazily, each boxed as `{ call }`; null when
 * there are no more. The box keeps a call whose value is itself null (an input `null`) from
 * reading as the end of the task's calls.
 */
export interface CallSource<C> {
  next(): { readonly call: C } | null;
}

/** A call the core handed out: which task, which position, which attempt. */
export interface DispatchedCall<C> {
  readonly taskId: string;
  /** Position of the call in its task (0-based), stable across retries. */
  readonly index: number;
  /** 1 for the first try. */
  readonly attempt: number;
  readonly call: C;
}

export type CallResult = { readonly ok: true } | { readonly ok: false; readonly retryable: boolean };

/** A task began EXECUTE: its calls come from `source`. A task id may be added once. */
export interface TaskAdded<C> {
  readonly type: "taskAdded";
  readonly taskId: string;
  readonly source: CallSource<C>;
}

/**
 * A task ended (finished, failed, cancelled, timed out). Its in-flight calls stop counting at once;
 * results that arrive for them later change nothing.
 */
export interface TaskRemoved {
  readonly type: "taskRemoved";
  readonly taskId: string;
}

/** A call handed out earlier finished; the reply says whether it is done, retried or failed for good. */
export interface CallFinished<C> {
  readonly type: "callFinished";
  readonly call: DispatchedCall<C>;
  readonly result: CallResult;
}

/**
 * A running call started a sub-call (ctx.call). It counts in its task's window and the Worker's:
 * new calls of the task wait while its sub-calls fill the window. A sub-call itself is never held
 * back: its parent is running and waits for it, so holding it could deadlock the task.
 */
export interface SubCallStarted {
  readonly type: "subCallStarted";
  readonly taskId: string;
}

/** A sub-call's attempt finished; the reply decides by the rules for calls whether it is tried again. */
export interface SubCallFinished {
  readonly type: "subCallFinished";
  readonly taskId: string;
  readonly attempt: number;
  readonly result: CallResult;
}

/** Time passed or room was made: hand out what may start now (the runner's pump). */
export interface TimeAdvanced {
  readonly type: "timeAdvanced";
}
