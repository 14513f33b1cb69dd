import type { JsonValue } from "../../json/raw-json";

const HEX = /^0x[0-9a-fA-F]*$/;

/**
 * normalizeEth puts a node's answer into the one shape blockdb promises (the local test chain
 * already has it): every hex string lowercase (some nodes answer checksummed addresses), and
 * every log with its `removed` flag. Quantities stay hex, as in Ethereum JSON-RPC.
 */
export function normalizeEth(value: JsonValue): JsonValue {
  if (typeof value === "string") return HEX.test(value) ? value.toLowerCase() : value;
  if (Array.isArray(value)) return value.map(normalizeEth);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(value)) out[k] = normalizeEth(v);
  if ("logIndex" in out && "topics" in out && typeof out.removed !== "boolean") out.removed = false;
  return out;
}
