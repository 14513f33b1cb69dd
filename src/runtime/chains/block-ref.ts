/** How a request names a block: a number, or one of the JSON-RPC tags (which are never cached). */
export const BLOCK_TAGS = ["latest", "finalized", "safe", "earliest", "pending"] as const;
export type BlockTag = (typeof BLOCK_TAGS)[number];

/** hexQuantity: a block number as JSON-RPC writes it (`0x1a`). */
export function hexQuantity(n: number): string {
  return "0x" + n.toString(16);
}
