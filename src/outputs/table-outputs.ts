import type { Row } from "./stores/table-store";
import { TableStoreError } from "./stores/table-store";
import { tableNameProblem } from "./stores/table-schema";
import { type OutputParseContext, OutputSpecError } from "./output";
import { CallErrorCode } from "../runtime/calls/call";
import type { JsonValue } from "../runtime/json/raw-json";
import { WriteRejected } from "./writer";

/** tableOf: a table output's table name, checked (a reserved or malformed name is the task's error, naming the field). */
export function tableOf(table: string, ctx: OutputParseContext): string {
  const problem = tableNameProblem(table);
  if (problem) throw new OutputSpecError(`${ctx.field}.table: ${problem}`);
  return table;
}

/** rowsOf checks that a function writing to a table returned a list of row objects. */
export function rowsOf(value: JsonValue): Row[] {
  if (!Array.isArray(value) || value.some((r) => r === null || typeof r !== "object" || Array.isArray(r))) {
    throw new WriteRejected(CallErrorCode.ResultNotRows, "a function writing to a table must return a list of rows (dicts of column -> value)");
  }
  return value as Row[];
}

/**
 * commitRejection: what a failed commit does to its call. A row the table refuses is the user's
 * ROW_MISMATCH (never retried); a store that is down is STORE_UNAVAILABLE (retried with backoff); a
 * run that is no longer current is STALE_RUN, a cut scope SCOPE_CONFLICT and another identity's
 * table NOT_OWNER (none retried);
 * anything else is the Worker's INTERNAL error.
 */
export function commitRejection(e: unknown): WriteRejected {
  if (e instanceof WriteRejected) return e;
  if (e instanceof TableStoreError) {
    if (e.code === "ROW_MISMATCH" || e.code === "INVALID_ARGUMENT") return new WriteRejected(CallErrorCode.RowMismatch, e.message);
    if (e.code === "STORE_UNAVAILABLE") return new WriteRejected(CallErrorCode.StoreUnavailable, e.message, true);
    if (e.code === "STALE_RUN") return new WriteRejected(CallErrorCode.StaleRun, e.message);
    if (e.code === "SCOPE_CONFLICT") return new WriteRejected(CallErrorCode.ScopeConflict, e.message);
    if (e.code === "NOT_OWNER") return new WriteRejected(CallErrorCode.NotOwner, e.message);
  }
  return new WriteRejected(CallErrorCode.Internal, `writing rows failed: ${(e as Error).message ?? String(e)}`);
}
