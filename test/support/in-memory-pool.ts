import type { CallFunction, CallOutcome, CallOwner, PrefetchedAnswer } from "../../src/runtime/calls/call";
import type { CallPool } from "../../src/runtime/calls/call-owner";
import type { JsonValue } from "../../src/runtime/json/raw-json";

/** A call the in-memory pool holds until the test finishes it. */
export interface HeldCall {
  readonly callId: string;
  readonly fn: CallFunction;
  readonly args: JsonValue;
  readonly budgetMs: number | undefined;
  readonly owner: CallOwner;
  /** The answer fetched ahead for the call (TaskRunner's IO prefetch), if it came with one. */
  readonly prefetched: PrefetchedAnswer | undefined;
  /** finish ends the call; `prefetchUsed` says whether its function took the prefetched answer (default false). */
  finish(outcome: ({ value: JsonValue } | { code: string; message?: string; retryable?: boolean }) & { prefetchUsed?: boolean }): void;
}

/**
 * InMemoryPool stands in for the executor pool in unit tests of what drives it (the task runner):
 * every call waits in `running` until the test finishes it with a value or a failure, so a test
 * decides the order of completions and sees exactly which calls were started and cancelled. It
 * never runs Python; the process tests run the real pool.
 */
export class InMemoryPool implements CallPool {
  readonly running = new Map<string, HeldCall>();
  readonly started: string[] = [];
  /** The executor owner key each started call was sent with, by call id. */
  readonly ownerKeys = new Map<string, string>();
  readonly cancelled: string[] = [];
  /** The most calls running at once. */
  peak = 0;

  execute(request: { callId: string; fn: CallFunction; args: JsonValue; budgetMs?: number; ownerKey?: string; prefetched?: PrefetchedAnswer }, owner: CallOwner): Promise<CallOutcome> {
    if (this.running.has(request.callId)) throw new Error(`call id ${request.callId} is already running`);
    this.started.push(request.callId);
    this.ownerKeys.set(request.callId, request.ownerKey ?? "");
    return new Promise<CallOutcome>((resolve) => {
      const held: HeldCall = {
        callId: request.callId,
        fn: request.fn,
        args: request.args,
        budgetMs: request.budgetMs,
        owner,
        prefetched: request.prefetched,
        finish: (o) => {
          if (this.running.get(request.callId) !== held) throw new Error(`call ${request.callId} is not running`);
          this.running.delete(request.callId);
          const out = outcome(request.callId, o);
          resolve(request.prefetched ? { ...out, prefetchUsed: o.prefetchUsed ?? false } : out);
        },
      };
      this.running.set(request.callId, held);
      this.peak = Math.max(this.peak, this.running.size);
    });
  }

  /** cancel ends the call as the real pool does: CANCELLED, not retryable. */
  cancel(callId: string, reason: string): void {
    this.cancelled.push(callId);
    this.running.get(callId)?.finish({ code: "CANCELLED", message: reason, retryable: false });
  }

  /** call returns the running call with this id, or throws naming the ones running. */
  call(callId: string): HeldCall {
    const c = this.running.get(callId);
    if (!c) throw new Error(`no call ${callId} is running (running: ${[...this.running.keys()].join(", ") || "none"})`);
    return c;
  }
}

function outcome(callId: string, o: { value: JsonValue } | { code: string; message?: string; retryable?: boolean }): CallOutcome {
  const common = { callId, cpuMs: 1, ioMs: 0, queueMs: 0, totalMs: 1, output: "", logs: [], executorId: "mem-0", compiled: false, suspensions: 0 };
  if ("value" in o) return { ...common, ok: true, value: o.value };
  return { ...common, ok: false, error: { code: o.code, message: o.message ?? o.code, traceback: "", line: 0, column: 0, retryable: o.retryable ?? false } };
}
