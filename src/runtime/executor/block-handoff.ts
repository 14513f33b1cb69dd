import { type ResumeResult, type SuspensionRequest, type WireResult } from "./protocol";
import { RawJson } from "../json/raw-json";

/** How an answer with a span reached its executor: by offset into the shared file, or as bytes in the frame. */
export type HandoffVia = "mapped" | "bytes";

/** The shared block store executors inherit (its open file) and read final blocks from by offset. */
export interface SharedBlockStore {
  /** The Worker's open file descriptor, read-only: each executor gets it at spawn. */
  readonly fd: number;
  /** `<st_dev>:<st_ino>` of that file: what an executor that inherited it reports in its Hello. */
  readonly identity: string;
}

/**
 * handOff decides how one answer goes to one executor. A value with a span (a final block of the
 * block store: the IO subsystem drops the span of anything else) goes as `{mapped: [offset,
 * length], store}` when the executor said in its Hello that it reads that very file
 * (`executorReads`) and did not ask for the bytes; otherwise its bytes are read now, and a failed
 * read (a truncated store) becomes the request's error. Other answers pass unchanged (via null).
 */
export function handOff(result: ResumeResult, request: SuspensionRequest, executorReads: string | null): { result: WireResult; via: HandoffVia | null } {
  if (!result.ok || !(result.value instanceof RawJson) || result.value.span === null) return { result, via: null };
  const { span } = result.value;
  if (executorReads !== null && span.file === executorReads && !(request.kind === "io" && request.bytes === true)) {
    return { result: { ok: true, mapped: [span.offset, span.length], store: span.file }, via: "mapped" };
  }
  try {
    return { result: { ok: true, value: result.value.withoutSpan() }, via: "bytes" };
  } catch (e) {
    const what = request.kind === "io" ? `${request.backend}.${request.op}: ` : "";
    return { result: { ok: false, error: { type: "BackendFailed", message: `${what}${(e as Error).message}` } }, via: "bytes" };
  }
}
