import { CallErrorCode } from "../../runtime/calls/call";
import type { JsonValue } from "../../runtime/executor/protocol";
import { type Row, TableStoreError } from "../../common/tables/table-store";
import { WriteRejected } from "./writer";

/** rowsOf checks that a function writing to a table returned a list of row objects. */
export function rowsOf(value: JsonValue): Row[] {
  if (!Array.isArray(value) || value.some((r) => r === null || typeof r !== "object" || Array.isArray(r))) {
    throw new WriteRejected(CallErrorCode.ResultNotRows, "a function writing to a table must return a list of rows (dicts of column -> value)");
  }
  return value as Row[];
}

/** intoStore runs one table-store write; a row the table refuses becomes the call's ROW_MISMATCH. */
export function intoStore<T>(write: () => T): T {
  try {
    return write();
  } catch (e) {
    if (e instanceof TableStoreError) throw new WriteRejected(CallErrorCode.RowMismatch, e.message);
    throw e;
  }
}
