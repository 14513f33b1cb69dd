import type { JsonValue } from "../../json/raw-json";
import { BackendError } from "../../backend-error";
import { BLOCK_TAGS, type BlockTag } from "../../chains/block-ref";

export { BLOCK_TAGS, hexQuantity, type BlockTag } from "../../chains/block-ref";

/** Parameter readers shared by the backends: each failure is an InvalidParams naming the op and field. */

export type Params = Record<string, JsonValue>;

export function paramsObject(params: JsonValue, op: string): Params {
  if (params === null || typeof params !== "object" || Array.isArray(params)) throw new BackendError("InvalidParams", `${op}: params must be an object`);
  return params as Params;
}

export function chainParam(p: Params, op: string): string {
  if (typeof p.chain !== "string" || p.chain === "") throw new BackendError("InvalidParams", `${op}: chain is required`);
  return p.chain;
}

/** A block number: a non-negative integer or 0x hex. */
export function blockNumberParam(p: Params, field: string, op: string): number {
  const n = p[field];
  const v = typeof n === "string" && /^0x[0-9a-f]+$/i.test(n) ? parseInt(n, 16) : n;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) throw new BackendError("InvalidParams", `${op}: ${field} must be a block number (integer or 0x hex), got ${JSON.stringify(n)}`);
  return v;
}


/** A block number or a tag (latest, finalized, safe, earliest, pending): tags are never cached. */
export function blockRefParam(p: Params, field: string, op: string): number | BlockTag {
  const v = p[field];
  if (typeof v === "string" && (BLOCK_TAGS as readonly string[]).includes(v)) return v as BlockTag;
  if (v === undefined) throw new BackendError("InvalidParams", `${op}: ${field} is required (a block number or one of ${BLOCK_TAGS.join(", ")})`);
  return blockNumberParam(p, field, op);
}
