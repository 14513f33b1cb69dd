import type { LogLine, ResumeResult, SuspensionRequest } from "../executor/protocol";
import type { JsonValue } from "../json/raw-json";

/**
 * CallErrorCode classifies a failed call. User failures and system failures never share a
 * code; system failures of the executor process are retryable (the call may succeed on a
 * fresh executor), and so is a call that a down or overloaded backend failed; a user's own error
 * never is.
 */
export const CallErrorCode = {
  UserError: "USER_ERROR",
  SyntaxError: "SYNTAX_ERROR",
  EntryNotFound: "ENTRY_NOT_FOUND",
  BadSignature: "BAD_SIGNATURE",
  BudgetExceeded: "BUDGET_EXCEEDED",
  WallClockExceeded: "WALL_CLOCK_EXCEEDED",
  ResultNotJson: "RESULT_NOT_JSON",
  Cancelled: "CANCELLED",
  ExecutorCrashed: "EXECUTOR_CRASHED",
  ExecutorHung: "EXECUTOR_HUNG",
  OomKilled: "OOM_KILLED",
  PoolClosed: "POOL_CLOSED",
  /** A retryable BackendError (backend down or overloaded) escaped the function: retry the call later. */
  BackendRetryable: "BACKEND_RETRYABLE",
  /** The call cannot be sent to an executor: its input nests too deep, or its frame (source and input) is too large. */
  InputRejected: "INPUT_REJECTED",
  /** The task's kept return values would exceed TASK_MAX_RESULT_BYTES: the task fails, the Worker's memory stays bounded. */
  ResultTooLarge: "RESULT_TOO_LARGE",
  /** A function writing to a table returned something other than a list of row objects. */
  ResultNotRows: "RESULT_NOT_ROWS",
  /** A row did not fit its table (an unknown column, a value of another kind). */
  RowMismatch: "ROW_MISMATCH",
  /** The table store could not be reached (down, timed out, locked too long): retry the call later. */
  StoreUnavailable: "STORE_UNAVAILABLE",
  /**
   * The call's run is no longer its task's current run (resubmitted elsewhere, ended, or its Worker's
   * lease in the table store expired), or its block rows would replace a later task's: the store
   * refused the commit and nothing of it was written. Never retried: the run is over.
   */
  StaleRun: "STALE_RUN",
  /** A block-table write would have cut a scope written before (its other blocks would lose their rows). Not retried. */
  ScopeConflict: "SCOPE_CONFLICT",
  /** The table belongs to another identity: only its owner or an admin may write it (the store wrote nothing of the call). Not retried. */
  NotOwner: "NOT_OWNER",
  Internal: "INTERNAL",
} as const;
export type CallErrorCode = (typeof CallErrorCode)[keyof typeof CallErrorCode];

const RETRYABLE: ReadonlySet<string> = new Set([
  CallErrorCode.ExecutorCrashed,
  CallErrorCode.ExecutorHung,
  CallErrorCode.OomKilled,
  CallErrorCode.PoolClosed,
  CallErrorCode.BackendRetryable,
  CallErrorCode.StoreUnavailable,
]);

export function isRetryable(code: string): boolean {
  return RETRYABLE.has(code);
}

/**
 * traceFilename turns a client's file name into what tracebacks show: its last path part,
 * letters, digits, `.`, `_` and `-` only, at most 100 characters; undefined when nothing is left.
 */
export function traceFilename(name: string | undefined): string | undefined {
  const base = (name ?? "").split(/[/\\]/).pop()!.replace(/[^A-Za-z0-9._-]/g, "").slice(0, 100);
  return base === "" ? undefined : base;
}

/** The function to run: inline source addressed by its sha256 digest. */
export interface CallFunction {
  readonly source: string;
  readonly entry: string;
  /** sha256 hex of source; computed by the pool when absent. */
  readonly digest?: string;
  /** The file the source came from (`fn.py`), named in tracebacks instead of `<blockx:main@digest>`. */
  readonly filename?: string;
}

export interface CallRequest {
  /** Correlation id: it appears in the executor messages and the logs. */
  readonly callId: string;
  readonly fn: CallFunction;
  readonly args: JsonValue;
  /** CPU + IO-backend budget; default from the pool's config (5000 ms). */
  readonly budgetMs?: number;
  /**
   * Whose code and data the call carries: an executor runs calls of one owner per incarnation and
   * is recycled (a fresh process) before it serves another, so nothing one owner's code leaves in
   * the interpreter reaches another's. Absent: "", one owner shared by every such call.
   */
  readonly ownerKey?: string;
  /**
   * The answer to the IO request the call is expected to make first, fetched before it starts
   * (the Worker's IoPrefetchPlan): taken without a round trip if the function asks exactly that.
   */
  readonly prefetched?: PrefetchedAnswer;
  /**
   * The run the call belongs to (a task writing tables: its id and run generation, fencing's
   * src/outputs/stores/run-fence.ts); the function reads it as `ctx.run`. Absent otherwise.
   */
  readonly run?: CallRun;
}

/** CallRun: which run of which task a call is part of (ctx.run). */
export interface CallRun {
  readonly taskId: string;
  readonly generation: number;
}

/** An IO request and its answer, fetched ahead of the call that is expected to ask for it. */
export interface PrefetchedAnswer {
  readonly request: Extract<SuspensionRequest, { kind: "io" }>;
  readonly answer: IoAnswer;
}

/** The mark between a parent call's id and its sub-call's number: `<parent call id>/sub-<n>`. */
const SUB_CALL_MARK = "/sub-";

/** subCallId: the id of a parent call's n-th sub-call (attempts of one sub-call take new numbers). */
export function subCallId(parentCallId: string, n: number): string {
  return `${parentCallId}${SUB_CALL_MARK}${n}`;
}

/** parentCallIdOf: the id of the call that started this sub-call, or null for a top-level call. */
export function parentCallIdOf(callId: string): string | null {
  const i = callId.lastIndexOf(SUB_CALL_MARK);
  return i > 0 ? callId.slice(0, i) : null;
}

/** What the owner answers for one IO request: the value or an error, and the backend time spent. */
export type IoAnswer = ResumeResult & { readonly ioMs: number };

/**
 * CallOwner serves a call's suspensions. The Worker plugs in its IO subsystem and its
 * Dispatcher (for sub-calls); the Sync Invoker its read-only IO. Both may be slow or fail;
 * neither may throw (a thrown error becomes an error result for that request).
 */
export interface CallOwner {
  io?(request: Extract<SuspensionRequest, { kind: "io" }>, callId: string): Promise<IoAnswer>;
  /** `context` is what the pool knows of the parent when it asks (absent: nothing known). */
  subCall?(request: Extract<SuspensionRequest, { kind: "call" }>, callId: string, context?: SubCallContext): Promise<SubCallAnswer>;
}

/** What a sub-call inherits from its parent at the moment it is asked for. */
export interface SubCallContext {
  /** The parent's budget minus its CPU and IO time so far: the sub-call's own budget (a shared one, not a fresh one). */
  readonly budgetLeftMs: number;
}

/** A sub-call's result for its parent, and the CPU + IO ms it spent (charged to the parent as waiting, like IO). */
export type SubCallAnswer = ResumeResult & { readonly spentMs?: number };

export interface CallFailure {
  readonly code: CallErrorCode | string;
  readonly message: string;
  readonly traceback: string;
  readonly line: number;
  readonly column: number;
  readonly retryable: boolean;
  /**
   * "call": the failure is charged to the calls that were running, not to the host: their executor
   * died (exit, OOM, hung, wall clock) while it ran them, so one of them (maybe this one) killed it.
   * Such a failure is retried up to CALL_MAX_ATTEMPTS like any retryable one, and never counts
   * toward the error rate Coordinators read (a hostile function would otherwise take its Worker
   * out of rotation). Absent: the host's own failure.
   */
  readonly blame?: "call";
}

interface OutcomeCommon {
  readonly callId: string;
  /** Executor CPU time used by the call. */
  readonly cpuMs: number;
  /** IO-backend time charged to the call (as reported by the owner). */
  readonly ioMs: number;
  /** Time waiting for an executor, before the call first ran. */
  readonly queueMs: number;
  readonly totalMs: number;
  /** What the call printed: stdout and stderr interleaved in the order written. */
  readonly output: string;
  /** stdout and stderr apart; present only when the call wrote to stderr (else stdout is `output`). */
  readonly stdout?: string;
  readonly stderr?: string;
  readonly logs: readonly LogLine[];
  readonly executorId: string;
  /** Whether this call compiled the source (false: compile cache hit). */
  readonly compiled: boolean | undefined;
  readonly suspensions: number;
  /** The call took the answer prefetched for it (CallRequest.prefetched); absent: none was given. */
  readonly prefetchUsed?: boolean;
}

export type CallOutcome = (OutcomeCommon & { readonly ok: true; readonly value: JsonValue }) | (OutcomeCommon & { readonly ok: false; readonly error: CallFailure });
