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
  | { kind: "io"; backend: string; op: string; params: JsonValue }
  | { kind: "call"; function: FunctionRequestRef; args: JsonValue };

/**
 * RawJson is a value already serialised as JSON (UTF-8 bytes or text). Backends and the IO cache
 * hand blocks around in this form so the Worker never parses and re-serialises a large immutable
 * value on its way to the executor: the frame encoder copies the bytes in as they are.
 */
export class RawJson {
  private textForm: string | undefined;
  private bytesForm: Uint8Array | undefined;

  constructor(data: string | Uint8Array) {
    if (typeof data === "string") this.textForm = data;
    else this.bytesForm = data;
  }

  get text(): string {
    return (this.textForm ??= utf8Decoder.decode(this.bytesForm));
  }

  get bytes(): Uint8Array {
    return (this.bytesForm ??= utf8Encoder.encode(this.textForm));
  }

  /** Size in bytes of the serialised value (what a byte-bounded cache charges). */
  get byteLength(): number {
    return this.bytes.byteLength;
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
  | { type: "Hello"; protocol: number; executorId: string; token: string; pid: number; python: string }
  | { type: "Pong"; seq: number }
  | { type: "CallWaiting"; callId: string; requests: SuspensionRequest[]; cpuMs: number }
  | { type: "CallCompleted"; callId: string; result: JsonValue; cpuMs: number; output: string; stdout?: string; stderr?: string; logs: LogLine[]; compiled?: boolean }
  | { type: "CallFailed"; callId: string; error: ExecutorCallError; cpuMs: number; output: string; stdout?: string; stderr?: string; logs: LogLine[]; compiled?: boolean };

export type PoolMessage =
  | { type: "Ping"; seq: number }
  /** `source` only the first time a digest goes to an executor (and after SOURCE_NOT_CACHED); then the digest alone. */
  | { type: "ExecuteCall"; callId: string; digest: string; source?: string; entry: string; args: JsonValue; budgetMs: number; filename?: string }
  | { type: "ResumeCall"; callId: string; results: ResumeResult[]; ioMs: number }
  | { type: "CancelCall"; callId: string; reason: string };
