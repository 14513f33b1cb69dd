/**
 * Message types of the executor protocol, version 1 (executor-py/PROTOCOL.md is the contract;
 * keep both in step).
 */

import type { JsonValue, RawJson } from "../json/raw-json";

export const PROTOCOL_VERSION = 1;

/** The executor's answer to an ExecuteCall by digest whose source it does not hold (never sent, or evicted): the pool resends with the source. */
export const SOURCE_NOT_CACHED = "SOURCE_NOT_CACHED";


export type FunctionRequestRef = { name: string; entry?: string } | { source: string; entry?: string };

export type SuspensionRequest =
  /** `bytes`: the executor could not read a mapped answer itself; answer with the value's bytes. */
  | { kind: "io"; backend: string; op: string; params: JsonValue; bytes?: boolean }
  | { kind: "call"; function: FunctionRequestRef; args: JsonValue };




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
