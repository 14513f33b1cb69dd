import type { IoAnswer } from "../executor/call";
import type { JsonValue, RawJson } from "../executor/protocol";

/** Every backend op is declared read or write (the Sync Invoker will refuse writes). */
export interface BackendOp {
  readonly kind: "read" | "write";
  /** A value, or its JSON text as RawJson when the backend already has it serialised. */
  handle(params: JsonValue): Promise<JsonValue | RawJson> | JsonValue | RawJson;
}

export interface Backend {
  readonly name: string;
  readonly ops: Readonly<Record<string, BackendOp>>;
}

/**
 * BackendError: an IO request that failed in a way the user function sees as
 * BackendError(type, message, retryable); retryable says the same request may succeed later.
 */
export class BackendError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly retryable = false,
  ) {
    super(message);
  }
}

/**
 * BackendRegistry routes a call's IO request (`ctx.io(backend, op, params)`) to a backend and
 * times it: the time is charged to the call's budget. This is the seam the IO subsystem (cache,
 * singleflight, admission) will wrap.
 */
export class BackendRegistry {
  private readonly backends = new Map<string, Backend>();

  register(backend: Backend): this {
    this.backends.set(backend.name, backend);
    return this;
  }

  async call(backend: string, op: string, params: JsonValue): Promise<IoAnswer> {
    const started = performance.now();
    const ioMs = () => performance.now() - started;
    const b = this.backends.get(backend);
    if (!b) return { ok: false, error: { type: "UnknownBackend", message: `no backend ${JSON.stringify(backend)} (have: ${[...this.backends.keys()].join(", ") || "none"})` }, ioMs: 0 };
    const o = b.ops[op];
    if (!o) return { ok: false, error: { type: "UnknownOp", message: `backend ${backend} has no op ${JSON.stringify(op)} (have: ${Object.keys(b.ops).join(", ")})` }, ioMs: 0 };
    try {
      const value = await o.handle(params);
      return { ok: true, value, ioMs: ioMs() };
    } catch (e) {
      const type = e instanceof BackendError ? e.type : "BackendFailed";
      const retryable = e instanceof BackendError && e.retryable;
      return { ok: false, error: { type, message: `${backend}.${op}: ${(e as Error).message}`, ...(retryable ? { retryable } : {}) }, ioMs: ioMs() };
    }
  }
}
