import { traceFilename, type CallFunction } from "../calls/call";
import { digestOf, type FunctionSnapshot } from "./function-code-view";

/** ResolvedFunction is what an executor runs: source, entry, digest, and the file tracebacks name. */
export interface ResolvedFunction extends CallFunction {
  readonly digest: string;
  /** The name in FUNCTIONS_DIR, or "" for inline source. */
  readonly name: string;
}

/** Why a function could not be resolved; each caller maps it to its own error code. */
export type LookupFailure = "BAD_ENTRY" | "NO_FUNCTIONS_DIR" | "NOT_FOUND";

export type FunctionLookup = { readonly ok: true; readonly fn: ResolvedFunction } | { readonly ok: false; readonly reason: LookupFailure; readonly message: string };

const PYTHON_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** How many names a NOT_FOUND message lists before "...". */
const NAMES_SHOWN = 20;

/** checkEntry: the entry point ("" means main) must be a Python identifier. */
export function checkEntry(entry: string | undefined): { ok: true; entry: string } | { ok: false; message: string } {
  const e = entry || "main";
  return PYTHON_IDENTIFIER.test(e) ? { ok: true, entry: e } : { ok: false, message: `not a Python identifier: ${JSON.stringify(e)}` };
}

/**
 * lookupFunction resolves a function by name in a FUNCTIONS_DIR snapshot (null: the process has
 * none), with its entry point (default main); `role` names the process in the message. It is the
 * one lookup behind a task's function, a Sync Invoker request's and every sub-call's, so all of
 * them answer a miss the same way.
 */
export function lookupFunction(functions: FunctionSnapshot | null, name: string, entry?: string, role = "process"): FunctionLookup {
  const e = checkEntry(entry);
  if (!e.ok) return { ok: false, reason: "BAD_ENTRY", message: `entry: ${e.message}` };
  if (!functions) return { ok: false, reason: "NO_FUNCTIONS_DIR", message: `no function ${JSON.stringify(name)}: this ${role} has no FUNCTIONS_DIR; send the source inline` };
  const code = functions.get(name);
  const refused = code ? undefined : functions.refused?.(name);
  if (refused) return { ok: false, reason: "NOT_FOUND", message: `function ${JSON.stringify(name)} in FUNCTIONS_DIR: ${refused}` };
  if (!code) {
    const have = functions.names();
    const list = have.length > NAMES_SHOWN ? `${have.slice(0, NAMES_SHOWN).join(", ")}, ...` : have.join(", ") || "none";
    return { ok: false, reason: "NOT_FOUND", message: `no function ${JSON.stringify(name)} in FUNCTIONS_DIR (epoch ${functions.epoch} has: ${list})` };
  }
  return { ok: true, fn: { source: code.source, entry: e.entry, digest: code.digest, name: code.name, filename: `${code.name}.py` } };
}

/** inlineFunction: source sent with the request, addressed by its digest; `filename` as the client named it. */
export function inlineFunction(source: string, entry: string | undefined, filename?: string): FunctionLookup {
  const e = checkEntry(entry);
  if (!e.ok) return { ok: false, reason: "BAD_ENTRY", message: `entry: ${e.message}` };
  const file = traceFilename(filename);
  return { ok: true, fn: { source, entry: e.entry, digest: inlineDigest(source), name: "", ...(file ? { filename: file } : {}) } };
}

/** Sources up to this size have their digest remembered; larger ones are hashed each time. */
const REMEMBERED_SOURCE_CHARS = 64 * 1024;
/** How many recent sources' digests are remembered (at most 4 MiB of UTF-16 keys). */
const REMEMBERED_SOURCES = 32;
const recentDigests = new Map<string, string>();

/**
 * inlineDigest: digestOf, remembered for the last few small sources. A batch of tasks sends one
 * function's source with every task; a sha256 per task was 2% of a busy Worker's CPU, where a
 * lookup by the source string costs a hash of it (JavaScriptCore's, not a cryptographic one).
 */
function inlineDigest(source: string): string {
  if (source.length > REMEMBERED_SOURCE_CHARS) return digestOf(source);
  const known = recentDigests.get(source);
  if (known !== undefined) return known;
  const digest = digestOf(source);
  if (recentDigests.size >= REMEMBERED_SOURCES) recentDigests.delete(recentDigests.keys().next().value!);
  recentDigests.set(source, digest);
  return digest;
}

/**
 * sourceBytesOver: the source's UTF-8 size when it is over `maxBytes` (EXECUTOR_MAX_SOURCE_BYTES),
 * else null. Counted only when the length alone cannot tell (UTF-8 takes 1 to 3 bytes per UTF-16 unit).
 */
export function sourceBytesOver(source: string, maxBytes: number): number | null {
  if (source.length * 3 <= maxBytes) return null;
  const bytes = Buffer.byteLength(source, "utf8");
  return bytes > maxBytes ? bytes : null;
}
