/**
 * ExecutorPoolEvent is everything that can happen to ExecutorPoolCore: facts, in the past tense,
 * that the ExecutorPool feeds through `ExecutorPoolCore.handle(event, nowMs)`. The union is closed;
 * `handle` switches over it exhaustively. Executors are named by their slot `index`; an event about
 * an executor is about the slot's current incarnation (the adapter drops messages of an earlier one
 * by their executor id before they get here).
 */
export type ExecutorPoolEvent = TimeAdvanced | ExecutorIntroduced | ExecutorHeardFrom | ExecutorDied | CallSubmitted | CallEnded | CallRunning | CallWaiting | MemorySampled;

/**
 * The driver's timer fired (at the decision's wakeAtMs, or earlier): pings become due, silent
 * executors turn out hung, dead slots become due to start, calls past the wall-clock ceiling get
 * their executor killed, memory is due to be sampled. A fresh pool's first timeAdvanced starts
 * every executor.
 */
export interface TimeAdvanced {
  readonly type: "timeAdvanced";
}

/**
 * The STARTING executor of slot `index` connected and said a valid Hello: it is READY and takes
 * calls, so waiting calls are sent to it. The adapter checks the Hello (token, executor id,
 * protocol, an executor it still counts alive); one for a slot that is not STARTING is refused.
 */
export interface ExecutorIntroduced {
  readonly type: "executorIntroduced";
  readonly index: number;
}

/**
 * Any message came from the executor of slot `index` (a Pong or call traffic): its frame loop is
 * alive. A Pong alone is not enough under load: pings queue behind large ResumeCall frames, and an
 * executor busy working through them would be killed as hung.
 */
export interface ExecutorHeardFrom {
  readonly type: "executorHeardFrom";
  readonly index: number;
}

/**
 * The executor of slot `index` is gone (exited, its socket closed, or the pool killed it). Its calls
 * leave the slot (the adapter fails them and reports callEnded for each); the slot restarts after
 * a backoff. Repeating it for the same incarnation changes nothing.
 */
export interface ExecutorDied {
  readonly type: "executorDied";
  readonly index: number;
}

/**
 * A call was handed to the pool: it goes to a READY executor already serving its owner, or to a
 * fresh one (the least loaded of the first `spread` that keep up: ExecutorPoolCore.pick), or waits
 * (FIFO among the calls that cannot be placed). Ids are unique
 * while the call lives. `ownerKey` (absent: "", one shared owner) is whose code and data it
 * carries: an executor serves one owner per incarnation.
 */
export interface CallSubmitted {
  readonly type: "callSubmitted";
  readonly callId: string;
  readonly ownerKey?: string;
}

/**
 * A call ended, however (result, failure, cancelled while waiting, its executor died): it frees its
 * place on its executor (if that incarnation still lives) or leaves the wait queue. Unknown ids:
 * nothing.
 */
export interface CallEnded {
  readonly type: "callEnded";
  readonly callId: string;
}

/**
 * The call runs in its executor from now (sent to it, resumed with its IO answers, or sent again
 * with its source): its wall clock runs. Past the ceiling, its executor is killed (killExecutor,
 * WALL_CLOCK). Unknown ids, or a call not on an executor: nothing.
 */
export interface CallRunning {
  readonly type: "callRunning";
  readonly callId: string;
}

/** The call waits for its IO answers (CallWaiting): its wall clock stops until it runs again. */
export interface CallWaiting {
  readonly type: "callWaiting";
  readonly callId: string;
}

/**
 * The adapter read the resident memory of slot `index`'s executor (its process tree). Over the
 * memory limit, the executor is killed (killExecutor, OVER_MEMORY), once per incarnation.
 */
export interface MemorySampled {
  readonly type: "memorySampled";
  readonly index: number;
  readonly rssBytes: number;
}
