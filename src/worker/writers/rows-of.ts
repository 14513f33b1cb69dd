import { CallErrorCode } from "../executor/call";
import type { JsonValue } from "../executor/protocol";
import type { Row } from "./table-store";
import { WriteRejected } from "./writer";

/** rowsOf checks that a function writing to a table returned a list of row objects. */
export function rowsOf(value: JsonValue): Row[] {
  if (!Array.isArray(value) || value.some((r) => r === null || typeof r !== "object" || Array.isArray(r))) {
    throw new WriteRejected(CallErrorCode.ResultNotRows, "a function writing to a table must return a list of rows (dicts of column -> value)");
  }
  return value as Row[];
}
