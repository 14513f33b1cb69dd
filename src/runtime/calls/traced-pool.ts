import type { Tracer } from "../../common/trace/tracer";
import { parentCallIdOf, type CallOwner } from "./call";
import type { CallPool } from "./call-owner";

/**
 * tracedPool returns `pool` with every call traced (WORKER_TRACE, SYNCINVOKER_TRACE): a span per
 * call, a child per IO request it waits on (`io <backend>.<op>`), and, once it ends, its `queue`
 * (waiting for an executor) and `run` (on one, suspensions included) children, which add up to the
 * call exactly. A sub-call hangs under its parent call; a top-level call under the open span
 * `parentKeyOf(callId)` names (its task, its request), or is a root. Off: `pool` itself.
 */
export function tracedPool(pool: CallPool, tracer: Tracer, parentKeyOf: (callId: string) => string): CallPool {
  if (!tracer.enabled) return pool;
  return {
    execute: async (request, owner) => {
      const { callId } = request;
      const parentCall = parentCallIdOf(callId);
      const parent = (parentCall !== null ? tracer.open(callKey(parentCall)) : undefined) ?? tracer.open(parentKeyOf(callId));
      const span = parent ? parent.child("call", { callId }, callKey(callId)) : tracer.span("call", { callId }, callKey(callId));
      const startUs = span.startUs;
      const io = owner.io;
      const traced: CallOwner = io
        ? {
            ...owner,
            io: async (req, id) => {
              const s = span.child(`io ${req.backend}.${req.op}`);
              const answer = await io.call(owner, req, id);
              s.end({ ok: answer.ok, ioMs: Math.round(answer.ioMs) });
              return answer;
            },
          }
        : owner;
      const outcome = await pool.execute(request, traced);
      const endUs = tracer.nowUs();
      const ranFromUs = Math.min(endUs, startUs + Math.round(outcome.queueMs * 1000));
      span.completed("queue", startUs, ranFromUs);
      span.completed("run", ranFromUs, endUs, { cpuMs: Math.round(outcome.cpuMs), ioMs: Math.round(outcome.ioMs), executor: outcome.executorId });
      span.end({ outcome: outcome.ok ? "OK" : outcome.error.code }, endUs);
      return outcome;
    },
    cancel: (callId, reason) => pool.cancel(callId, reason),
  };
}

/** callKey: the key a call's span is found under while it runs. */
export const callKey = (callId: string): string => `call:${callId}`;
