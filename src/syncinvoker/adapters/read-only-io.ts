import type { IoAnswer } from "../../runtime/calls/call";
import type { SuspensionRequest } from "../../runtime/executor/protocol";
import type { IoSubsystem, IoTraceEntry as SubsystemTraceEntry } from "../../runtime/io/io-subsystem";

/** IoTraceEntry is one IO request of a call, as DebugInvoke reports it: the subsystem's entry, with the error as `Type: message` (empty when it succeeded). */
export type IoTraceEntry = Omit<SubsystemTraceEntry, "error"> & { readonly error: string };

/** CallIo is one call's view of the read-only IO: its IO callback, what it recorded, and its end. */
export interface CallIo {
  io(request: Extract<SuspensionRequest, { kind: "io" }>): Promise<IoAnswer>;
  readonly trace: readonly IoTraceEntry[];
  /** The first write op the call attempted (`backend.op`), or null. */
  readonly writeAttempted: string | null;
  /** end releases the call's IO (its window, its share of flights); later requests answer Cancelled. */
  end(): void;
}

/**
 * ReadOnlyIo is the Sync Invoker's IO: the Worker's IoSubsystem in read-only mode (read cache,
 * singleflight, IO window, admission), one TaskIo per call. The subsystem refuses a write op
 * (by its declared `BackendOp.kind`) with `PermissionDenied` before it reaches the backend;
 * ReadOnlyIo also marks the call (`writeAttempted`, `onWrite`) so the invoker fails it even if
 * the function catches the error. Each request becomes a trace entry {backend, op,
 * durationMs, cacheHit, bytes, error}.
 */
export class ReadOnlyIo {
  constructor(private readonly subsystem: IoSubsystem) {
    // A subsystem that lets writes through would make this a read-write path with a read-only name.
    if (!subsystem.config.readOnly) throw new Error("ReadOnlyIo needs an IoSubsystem with readOnly: true");
  }

  /** forCall: `callId` names the call's TaskIo; `traced` records the trace (DebugInvoke). */
  forCall(opts: { callId: string; traced: boolean; onWrite?: (op: string) => void }): CallIo {
    const trace: IoTraceEntry[] = [];
    const state: { writeAttempted: string | null } = { writeAttempted: null };
    const task = this.subsystem.forTask(opts.callId);
    const backends = this.subsystem.backends;
    return {
      trace,
      get writeAttempted() {
        return state.writeAttempted;
      },
      async io(req) {
        if (backends.op(req.backend, req.op)?.kind === "write" && state.writeAttempted === null) {
          state.writeAttempted = `${req.backend}.${req.op}`;
          opts.onWrite?.(state.writeAttempted);
        }
        const { answer, trace: t } = await task.call(req.backend, req.op, req.params);
        if (opts.traced) {
          trace.push({
            backend: t.backend,
            op: t.op,
            durationMs: t.durationMs,
            cacheHit: t.cacheHit,
            bytes: t.bytes,
            error: answer.ok ? "" : `${answer.error.type}: ${answer.error.message}`,
          });
        }
        return answer;
      },
      end: () => task.end(),
    };
  }
}
