import type { IoAnswer } from "../../worker/executor/call";
import { RawJson, type JsonValue, type SuspensionRequest } from "../../worker/executor/protocol";
import type { BackendRegistry } from "../../worker/io/backend-registry";

/** IoTraceEntry is one IO request of a call, as DebugInvoke reports it. */
export interface IoTraceEntry {
  readonly backend: string;
  readonly op: string;
  readonly durationMs: number;
  readonly cacheHit: boolean;
  /** Size of the value's JSON text (0 on error). */
  readonly bytes: number;
  /** Empty when the request succeeded. */
  readonly error: string;
}

/** CallIo is one call's view of the read-only IO: its IO callback and what it recorded. */
export interface CallIo {
  io(request: Extract<SuspensionRequest, { kind: "io" }>): Promise<IoAnswer>;
  readonly trace: readonly IoTraceEntry[];
  /** The first write op the call attempted (`backend.op`), or null. */
  readonly writeAttempted: string | null;
}

/**
 * ReadOnlyIo is the Sync Invoker's IO: every request goes through the BackendRegistry, except
 * a write op (by its declared `BackendOp.kind`), which is refused without reaching the backend
 * with a `PermissionDenied` BackendError naming `backend.op`. A refused write also marks the
 * call (`writeAttempted`, `onWrite`) so the invoker fails it even if the function catches the
 * error. Each request becomes a trace entry {backend, op, durationMs, cacheHit, bytes, error}.
 *
 * Kept to this one file on purpose: the Worker's IoSubsystem (read cache, singleflight,
 * admission, a read-only mode and a per-request trace) replaces it at merge time; `forCall`
 * is the seam.
 */
export class ReadOnlyIo {
  constructor(private readonly backends: BackendRegistry) {}

  /** forCall: `traced` records the trace (DebugInvoke; sizing values costs a serialisation). */
  forCall(opts: { traced: boolean; onWrite?: (op: string) => void }): CallIo {
    const trace: IoTraceEntry[] = [];
    const record = (e: IoTraceEntry) => {
      if (opts.traced) trace.push(e);
    };
    const state: { writeAttempted: string | null } = { writeAttempted: null };
    const backends = this.backends;
    return {
      trace,
      get writeAttempted() {
        return state.writeAttempted;
      },
      async io(req) {
        const name = `${req.backend}.${req.op}`;
        if (backends.op(req.backend, req.op)?.kind === "write") {
          const message = `${name} is a write op; the Sync Invoker is read-only and refuses every write`;
          record({ backend: req.backend, op: req.op, durationMs: 0, cacheHit: false, bytes: 0, error: `PermissionDenied: ${message}` });
          if (state.writeAttempted === null) {
            state.writeAttempted = name;
            opts.onWrite?.(name);
          }
          return { ok: false, error: { type: "PermissionDenied", message }, ioMs: 0 };
        }
        const answer = await backends.call(req.backend, req.op, req.params);
        if (!opts.traced) return answer;
        record({
          backend: req.backend,
          op: req.op,
          durationMs: answer.ioMs,
          cacheHit: false,
          bytes: answer.ok ? jsonBytes(answer.value) : 0,
          error: answer.ok ? "" : `${answer.error.type}: ${answer.error.message}`,
        });
        return answer;
      },
    };
  }
}

function jsonBytes(value: JsonValue | RawJson): number {
  const text = value instanceof RawJson ? value.text : JSON.stringify(value);
  return Buffer.byteLength(text ?? "null");
}
