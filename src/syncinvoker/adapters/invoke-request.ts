import { parseExactJson } from "../../common/json/exact-json";
import type { FunctionRef } from "../../gen/worker/v1/worker";
import type { FunctionSnapshot } from "../../runtime/functions/function-code-view";
import { inlineFunction, lookupFunction, sourceBytesOver, type ResolvedFunction } from "../../runtime/functions/function-lookup";
import type { JsonValue } from "../../runtime/json/raw-json";
import { SyncInvokerError, SyncInvokerErrorCode } from "../core/sync-invoker-error";

/** The largest timeout_ms a request may ask for (and the largest default): 10 minutes. */
export const MAX_TIMEOUT_MS = 600_000;

export type { ResolvedFunction } from "../../runtime/functions/function-lookup";

function invalid(message: string): SyncInvokerError {
  return new SyncInvokerError(SyncInvokerErrorCode.InvalidArgument, message);
}

/**
 * resolveFunction validates a FunctionRef (exactly one of name and source; entry a Python
 * identifier, default "main") and looks a name up in the current FUNCTIONS_DIR snapshot
 * (null when the invoker has no FUNCTIONS_DIR). An unknown name is FUNCTION_NOT_FOUND; a source over
 * `maxSourceBytes` (EXECUTOR_MAX_SOURCE_BYTES) is INVALID_ARGUMENT.
 */
export function resolveFunction(ref: FunctionRef | undefined, functions: FunctionSnapshot | null, maxSourceBytes = Infinity): ResolvedFunction {
  if (!ref) throw invalid("function: required (a name from FUNCTIONS_DIR or inline source)");
  if (ref.name !== "" && ref.source !== "") throw invalid("function: give either name or source, not both");
  if (ref.name === "" && ref.source === "") throw invalid("function: name or source is required");
  const found = ref.source !== "" ? inlineFunction(ref.source, ref.entry, ref.filename) : lookupFunction(functions, ref.name, ref.entry, "Sync Invoker");
  if (found.ok) {
    const bytes = sourceBytesOver(found.fn.source, maxSourceBytes);
    if (bytes !== null) throw invalid(`function.${ref.source !== "" ? "source" : `name: function ${JSON.stringify(ref.name)}`} is ${bytes} bytes of source, over the limit of ${maxSourceBytes} (EXECUTOR_MAX_SOURCE_BYTES)`);
    return found.fn;
  }
  if (found.reason === "BAD_ENTRY") throw invalid(`function.${found.message}`);
  throw new SyncInvokerError(SyncInvokerErrorCode.FunctionNotFound, found.message);
}

/** parseArgs reads the JSON-encoded argument; empty bytes mean null. */
export function parseArgs(args: Buffer): JsonValue {
  if (args.length === 0) return null;
  const text = args.toString("utf8");
  try {
    return parseExactJson(text) as JsonValue;
  } catch (e) {
    const shown = text.length > 80 ? `${text.slice(0, 80)}...` : text;
    throw invalid(`args: not valid JSON (${(e as Error).message}): ${JSON.stringify(shown)}`);
  }
}

/** budgetOf is the call's budget: timeout_ms, or the default when 0; at most MAX_TIMEOUT_MS. */
export function budgetOf(timeoutMs: number, defaultTimeoutMs: number): number {
  if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw invalid(`timeout_ms: expected 0 (the default) or a positive number of milliseconds, got ${timeoutMs}`);
  if (timeoutMs > MAX_TIMEOUT_MS) throw invalid(`timeout_ms: at most ${MAX_TIMEOUT_MS} (10 minutes), got ${timeoutMs}`);
  return timeoutMs === 0 ? defaultTimeoutMs : Math.ceil(timeoutMs);
}
