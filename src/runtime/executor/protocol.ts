/**
 * Message types of the executor protocol, version 1 (executor-py/PROTOCOL.md is the contract;
 * keep both in step).
 */

export const PROTOCOL_VERSION = 1;

/** The executor's answer to an ExecuteCall by digest whose source it does not hold (never sent, or evicted): the pool resends with the source. */
export const SOURCE_NOT_CACHED = "SOURCE_NOT_CACHED";

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export type FunctionRequestRef = { name: string; entry?: string } | { source: string; entry?: string };

export type SuspensionRequest =
  /** `bytes`: the executor could not read a mapped answer itself; answer with the value's bytes. */
  | { kind: "io"; backend: string; op: string; params: JsonValue; bytes?: boolean }
  | { kind: "call"; function: FunctionRequestRef; args: JsonValue };

/**
 * SharedSpan says where a value's JSON lies in a file the executor can read itself (the block
 * store, whose open file every executor inherits): `length` bytes at `offset` of the file whose
 * identity (`<st_dev>:<st_ino>`) is `file`.
 */
export interface SharedSpan {
  readonly file: string;
  readonly offset: number;
  readonly length: number;
}

/**
 * RawJson is a value already serialised as JSON (UTF-8 bytes or text). Backends and the IO cache
 * hand blocks around in this form so the Worker never parses and re-serialises a large immutable
 * value on its way to the executor: the frame encoder copies the bytes in as they are.
 *
 * A RawJson made from a SharedSpan knows where its bytes lie in a file executors can read by
 * themselves (`span`) and reads them only when something asks for them: a final block can then
 * be handed to an executor by offset and length, never read by the Worker at all.
 */
export class RawJson {
  private textForm: string | undefined;
  private bytesForm: Uint8Array | undefined;
  private load: (() => Uint8Array) | undefined;
  /** Where the bytes lie in a shared file, or null. */
  readonly span: SharedSpan | null;

  /** data: the text, the bytes, or where they lie in a shared file and how to read them there (at most once, on first use). */
  constructor(data: string | Uint8Array | { readonly span: SharedSpan; readonly load: () => Uint8Array }) {
    this.span = null;
    if (typeof data === "string") this.textForm = data;
    else if (data instanceof Uint8Array) this.bytesForm = data;
    else {
      this.span = data.span;
      this.load = data.load;
    }
  }

  get text(): string {
    return (this.textForm ??= utf8Decoder.decode(this.bytes));
  }

  /** The bytes (read from the shared file now if they were not yet: that may throw). */
  get bytes(): Uint8Array {
    if (this.bytesForm === undefined) {
      if (this.load) {
        this.bytesForm = this.load();
        this.load = undefined;
      } else this.bytesForm = utf8Encoder.encode(this.textForm);
    }
    return this.bytesForm;
  }

  /** Size in bytes of the serialised value (what a byte-bounded cache charges). */
  get byteLength(): number {
    return this.span !== null ? this.span.length : this.bytes.byteLength;
  }

  /**
   * residentBytes: the size of what this object holds in memory: nothing for a span whose bytes
   * were never read (the page cache holds them, not the Worker), else its byte length.
   */
  get residentBytes(): number {
    return this.span !== null && this.bytesForm === undefined ? 0 : this.byteLength;
  }

  /** withoutSpan: the same value as plain bytes, read now (for a reader that cannot read the shared file). */
  withoutSpan(): RawJson {
    return this.span === null ? this : new RawJson(this.bytes);
  }

  /** parse gives the value itself, for the rare reader inside the Worker. */
  parse(): JsonValue {
    return JSON.parse(this.text) as JsonValue;
  }
}

const utf8Decoder = new TextDecoder();
const utf8Encoder = new TextEncoder();

/** An IO error's `retryable` says the same request may succeed later (BackendError.retryable in Python). */
export type ResumeResult = { ok: true; value: JsonValue | RawJson } | { ok: false; error: { type: string; message: string; traceback?: string; retryable?: boolean } };

/**
 * WireResult is a result as it goes to one executor: a ResumeResult, or a final block by where it
 * lies in the shared block store (the JSON at [offset, offset + length) of the file `store`; only
 * to an executor that said in its Hello that it reads that file).
 */
export type WireResult = ResumeResult | { ok: true; mapped: [offset: number, length: number]; store: string };

export interface ExecutorCallError {
  code: string;
  message: string;
  traceback: string;
  line: number;
  column: number;
}

export interface LogLine {
  timeMs: number;
  level: string;
  message: string;
}

export type ExecutorMessage =
  /** `blockStore`: the identity (`<st_dev>:<st_ino>`) of the shared block store file the executor reads, when it was given one. */
  | { type: "Hello"; protocol: number; executorId: string; token: string; pid: number; python: string; blockStore?: string }
  | { type: "Pong"; seq: number }
  | { type: "CallWaiting"; callId: string; requests: SuspensionRequest[]; cpuMs: number }
  | { type: "CallCompleted"; callId: string; result: JsonValue; cpuMs: number; output: string; stdout?: string; stderr?: string; logs: LogLine[]; compiled?: boolean; prefetchUsed?: boolean }
  | { type: "CallFailed"; callId: string; error: ExecutorCallError; cpuMs: number; output: string; stdout?: string; stderr?: string; logs: LogLine[]; compiled?: boolean; prefetchUsed?: boolean };

/**
 * An IO answer the pool fetched before the call started: the executor hands it to the call's first
 * suspension if that asks for exactly this request (one request, the same JSON), without a round
 * trip; either way it is dropped then. `prefetchUsed` on the call's final frame says it was taken.
 */
export interface PrefetchedWire {
  backend: string;
  op: string;
  params: JsonValue;
  result: WireResult;
  ioMs: number;
}

export type PoolMessage =
  | { type: "Ping"; seq: number }
  /**
   * `source` only the first time a digest goes to an executor (and after SOURCE_NOT_CACHED); then the
   * digest alone. A large source goes as RawJson: its JSON encoded once, every executor's frame refers to it.
   */
  | {
      type: "ExecuteCall";
      callId: string;
      digest: string;
      source?: string | RawJson;
      entry: string;
      args: JsonValue;
      budgetMs: number;
      filename?: string;
      prefetched?: PrefetchedWire;
      /** The pool's only call when sent (sent only when the pool's executors spin: hotSpinUs > 0); the executor spins after answering only such a call. */
      lone?: true;
      /** The run the call belongs to (ctx.run), when its task's run is fenced. */
      run?: { taskId: string; generation: number };
    }
  | { type: "ResumeCall"; callId: string; results: WireResult[]; ioMs: number }
  | { type: "CancelCall"; callId: string; reason: string };
