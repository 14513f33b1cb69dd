import type { IoAnswer } from "../../calls/call";
import type { JsonValue, RawJson } from "../../json/raw-json";
import { BackendError } from "../../backend-error";

/**
 * CacheDeclaration says that an op's answer is immutable once `block <= head(chain) -
 * finalityDepth(chain)`: `block` is the block the request depends on (a range's highest),
 * `key` identifies the request fully (the op's canonical params). A `pure` answer depends on its
 * params alone (a decoding of data the request carries) and is final at once.
 */
export type CacheDeclaration =
  | { readonly key: string; readonly chain: string; readonly block: number }
  | { readonly key: string; readonly pure: true };

/** Every backend op is declared read or write (the Sync Invoker will refuse writes). */
export interface BackendOp {
  readonly kind: "read" | "write";
  handle(params: JsonValue): Promise<JsonValue | RawJson> | JsonValue | RawJson;
  /** cache declares the request cacheable once final; null or absent: never cached (latest, pending, writes). */
  cache?(params: JsonValue): CacheDeclaration | null;
}

export interface Backend {
  readonly name: string;
  readonly ops: Readonly<Record<string, BackendOp>>;
  /** head gives a chain's current head, for the finality rule of the read cache. */
  head?(chain: string): Promise<number>;
  /** finalityDepth: the chain's depth from the chains config; undefined = the Worker default (IO_FINALITY_DEPTH). */
  finalityDepth?(chain: string): number | undefined;
}


/** ResolvedOp is a backend and one of its ops, found by name. */
export interface ResolvedOp {
  readonly backend: Backend;
  readonly op: BackendOp;
}

type IoError = Extract<IoAnswer, { ok: false }>["error"];

/** errorOf turns whatever a backend threw into the error a user function sees. */
export function errorOf(backend: string, op: string, e: unknown): IoError {
  if (e instanceof BackendError) return { type: e.type, message: `${backend}.${op}: ${e.message}`, ...(e.retryable ? { retryable: true } : {}) };
  return { type: "BackendFailed", message: `${backend}.${op}: ${(e as Error)?.message ?? String(e)}` };
}

/**
 * BackendRegistry holds the Worker's backends by name and resolves `ctx.io(backend, op,
 * params)` to one of their ops. The IO subsystem (io-subsystem.ts) routes every request
 * through it; `call` is the bare path with no cache or admission, for tests and tools.
 */
export class BackendRegistry {
  private readonly backends = new Map<string, Backend>();

  register(backend: Backend): this {
    this.backends.set(backend.name, backend);
    return this;
  }

  /** op looks up a backend op's declaration (its kind: read or write), without calling it. */
  op(backend: string, op: string): BackendOp | undefined {
    const r = this.resolve(backend, op);
    return "op" in r ? r.op : undefined;
  }

  get(name: string): Backend | undefined {
    return this.backends.get(name);
  }

  names(): string[] {
    return [...this.backends.keys()];
  }

  /** resolve finds an op, or the UnknownBackend / UnknownOp error naming what exists. */
  resolve(backend: string, op: string): ResolvedOp | IoError {
    const b = this.backends.get(backend);
    if (!b) return { type: "UnknownBackend", message: `no backend ${JSON.stringify(backend)} (have: ${this.names().join(", ") || "none"})` };
    const o = Object.hasOwn(b.ops, op) ? b.ops[op] : undefined;
    if (!o) return { type: "UnknownOp", message: `backend ${backend} has no op ${JSON.stringify(op)} (have: ${Object.keys(b.ops).join(", ")})` };
    return { backend: b, op: o };
  }

  async call(backend: string, op: string, params: JsonValue): Promise<IoAnswer> {
    const r = this.resolve(backend, op);
    if (!("op" in r)) return { ok: false, error: r, ioMs: 0 };
    const started = performance.now();
    try {
      const value = await r.op.handle(params);
      return { ok: true, value, ioMs: performance.now() - started };
    } catch (e) {
      return { ok: false, error: errorOf(backend, op, e), ioMs: performance.now() - started };
    }
  }
}
