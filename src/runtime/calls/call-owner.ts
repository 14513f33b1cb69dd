import type { FunctionSnapshot } from "../functions/function-code-view";
import { inlineFunction, lookupFunction, type ResolvedFunction } from "../functions/function-lookup";
import type { FunctionRequestRef, SuspensionRequest } from "../executor/protocol";
import type { JsonValue } from "../json/raw-json";
import { subCallId, type CallFunction, type CallOutcome, type CallOwner, type CallRequest, type IoAnswer, type SubCallAnswer } from "./call";
import { SubCallWindow } from "./sub-call-window";

/** Sub-calls deeper than this fail, so that a function calling itself cannot run away. */
export const MAX_SUB_CALL_DEPTH = 8;

/** Sub-calls one call may have in flight where no task window applies (the Sync Invoker, `blockx exec`). */
export const DEFAULT_SUB_CALL_WINDOW = 64;

/** A sub-call resolved and ready to run: its function, its argument and the budget it inherits. */
export interface SubCall {
  readonly fn: ResolvedFunction;
  readonly args: JsonValue;
  /** What remains of the parent's budget when it asked (undefined: the pool's default, as for the parent). */
  readonly budgetMs: number | undefined;
  /** The parent's executor owner: a sub-call runs as its parent's owner (see CallRequest.ownerKey). */
  readonly ownerKey: string | undefined;
  /** A fresh id under the parent call's for each attempt: `<parent call id>/sub-<n>`. */
  nextCallId(): string;
}

/**
 * RunSubCall runs a resolved sub-call to its end with `owner` serving its own IO and sub-calls.
 * The Worker's retries a sub-call whose executor died and counts it in its task's window; the
 * Sync Invoker and `blockx exec` run it once (`runOnce`).
 */
export type RunSubCall = (call: SubCall, owner: CallOwner) => Promise<SubCallAnswer>;

export interface CallOwnerOptions {
  /** Serves the call's IO requests (the task's or request's IO handle). */
  readonly io: (request: Extract<SuspensionRequest, { kind: "io" }>, callId: string) => Promise<IoAnswer>;
  /** Functions by name for sub-calls: the snapshot the task pinned or the request resolved in. */
  readonly functions: FunctionSnapshot | null;
  /** The role named when a sub-call by name finds no FUNCTIONS_DIR ("Worker", "Sync Invoker"). */
  readonly role: string;
  /** The top-level call's budget: a sub-call gets what remains of its parent's when the pool says, else this. */
  readonly budgetMs: number | undefined;
  readonly runSubCall: RunSubCall;
  /** The executor owner of the calls (CallRequest.ownerKey), passed on to every sub-call. */
  readonly ownerKey?: string;
  /** Sub-calls one call may have in flight: the task's window in the Worker; DEFAULT_SUB_CALL_WINDOW when absent. */
  readonly subCallWindow?: number;
}

/**
 * createCallOwner is the one owner of a call's suspensions, for the Worker, the Sync Invoker and
 * `blockx exec` alike: IO goes to the given handle; a sub-call is depth-limited
 * (MAX_SUB_CALL_DEPTH), resolved by name (with an entry) in the same function snapshot or taken
 * as inline source, given what remains of its parent's budget (the pool's `budgetLeftMs`), its
 * parent's executor owner and an id that carries the parent call's id (so the task's id too), and
 * run by `runSubCall` with an owner one level deeper. Past `subCallWindow` sub-calls in flight
 * under one parent, more wait for a place (SubCallWindow).
 */
export function createCallOwner(options: CallOwnerOptions, depth = 0): CallOwner {
  // One counter per owner: sub-calls of one parent (ctx.call_many) and retries never share an id.
  let seq = 0;
  const window = new SubCallWindow(options.subCallWindow ?? DEFAULT_SUB_CALL_WINDOW);
  return {
    io: options.io,
    subCall: async (req, parentCallId, context): Promise<SubCallAnswer> => {
      if (depth + 1 > MAX_SUB_CALL_DEPTH) return { ok: false, error: { type: "DEPTH_EXCEEDED", message: `sub-calls nest deeper than ${MAX_SUB_CALL_DEPTH}` } };
      const ref = req.function as FunctionRequestRef | undefined; // from the executor: untrusted
      if (typeof ref !== "object" || ref === null) return { ok: false, error: { type: "INVALID_ARGUMENT", message: "ctx.call: the function must be a name or an object" } };
      const found = "name" in ref ? lookupFunction(options.functions, ref.name, ref.entry, options.role) : inlineFunction(ref.source, ref.entry);
      if (!found.ok) return { ok: false, error: { type: found.reason === "BAD_ENTRY" ? "INVALID_ARGUMENT" : "FUNCTION_NOT_FOUND", message: found.message } };
      const budgetMs = context ? Math.floor(context.budgetLeftMs) : options.budgetMs;
      if (budgetMs !== undefined && budgetMs < 1) {
        return { ok: false, error: { type: "BUDGET_EXCEEDED", message: "the calling function has used its whole budget (CPU plus IO time): nothing is left for a sub-call" } };
      }
      const call: SubCall = { fn: found.fn, args: req.args, budgetMs, ownerKey: options.ownerKey, nextCallId: () => subCallId(parentCallId, ++seq) };
      await window.enter(parentCallId);
      try {
        return await options.runSubCall(call, createCallOwner(options, depth + 1));
      } finally {
        window.leave(parentCallId);
      }
    },
  };
}

/** The pool's side of a sub-call: what the Worker, the Sync Invoker and exec hand their calls to. */
export interface CallPool {
  execute(request: CallRequest, owner: CallOwner): Promise<CallOutcome>;
  cancel(callId: string, reason: string): void;
}

/** runOnce: run a sub-call once in the pool and hand its result, or its failure, to the parent. */
export function runOnce(pool: CallPool): RunSubCall {
  return async (call, owner) =>
    resumeResultOf(
      await pool.execute(
        { callId: call.nextCallId(), fn: call.fn, args: call.args, ...(call.budgetMs !== undefined ? { budgetMs: call.budgetMs } : {}), ...(call.ownerKey !== undefined ? { ownerKey: call.ownerKey } : {}) },
        owner,
      ),
    );
}

/** resumeResultOf: a finished sub-call as its parent's ctx.call sees it, with what it spent (`spentMs`: its CPU and IO ms, plus `earlierMs`). */
export function resumeResultOf(out: CallOutcome, suffix = "", earlierMs = 0): SubCallAnswer {
  const spentMs = earlierMs + out.cpuMs + out.ioMs;
  return out.ok ? { ok: true, value: out.value, spentMs } : { ok: false, error: { type: out.error.code, message: `${out.error.message}${suffix}`, traceback: out.error.traceback }, spentMs };
}
