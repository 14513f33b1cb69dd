import type { IoAnswer } from "../executor/call";
import type { JsonValue, RawJson } from "../executor/protocol";

/**
 * CacheDescriptor: the op's result is immutable once `block <= head(chain) - finalityDepth(chain)`
 * (for a range, its highest block); `key` identifies the request fully.
 */
export interface CacheDescriptor {
  readonly key: string;
  readonly chain: string;
  readonly block: number;
}

/** Every backend op is declared read or write (the Sync Invoker will refuse writes). */
export interface BackendOp {
  readonly kind: "read" | "write";
  /** A value, or its JSON text as RawJson when the backend already has it serialised. */
  handle(params: JsonValue): Promise<JsonValue | RawJson> | JsonValue | RawJson;
  /** cache: null/absent = never cached (latest, pending, heads, writes). */
  readonly cache?: (params: JsonValue) => CacheDescriptor | null;
}

export interface Backend {
  readonly name: string;
  readonly ops: Readonly<Record<string, BackendOp>>;
  /** head: the current head block of a chain (for the finality rule of `cache`). */
  readonly head?: (chain: string) => Promise<number>;
  /** finalityDepth: the chain's depth from the chains config; undefined = the Worker default (IO_FINALITY_DEPTH). */
  readonly finalityDepth?: (chain: string) => number | undefined;
}

/**
 * BackendError: an IO request that failed in a way the user function sees as BackendError(type,
 * message). `retryable` marks transient failures (BackendUnavailable, BackendOverloaded).
 */
export class BackendError extends Error {
  readonly retryable: boolean;
  constructor(
    readonly type: string,
    message: string,
    opts: { retryable?: boolean } = {},
  ) {
    super(message);
    this.retryable = opts.retryable ?? false;
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

  /** op looks up a backend op's declaration (its kind: read or write), without calling it. */
  op(backend: string, op: string): BackendOp | undefined {
    return this.backends.get(backend)?.ops[op];
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
      return { ok: false, error: { type, message: `${backend}.${op}: ${(e as Error).message}` }, ioMs: ioMs() };
    }
  }
}
