import { SyntheticChain } from "../../src/runtime/chains/localtestservice/synthetic-chain";

/** BLOCK_STATS: a block_table function reading its block through the Worker's IO path, one row per block. */
export const BLOCK_STATS = [
  "def main(ctx, input):",
  "    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': input['chain'], 'number': input['blockNumber']})",
  "    return [{'block': int(b['number'], 16), 'tx_count': len(b['transactions']), 'gas_used': int(b['gasUsed'], 16)}]",
].join("\n");

/** BUNDLE_STATS: the same rows from a block_bundle function, one per block of its bundle. */
export const BUNDLE_STATS = [
  "def main(ctx, input):",
  "    rows = []",
  "    for n in range(input['fromBlock'], input['toBlock'] + 1):",
  "        b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': input['chain'], 'number': n, 'full': False})",
  "        rows.append({'block': n, 'tx_count': len(b['transactions']), 'gas_used': int(b['gasUsed'], 16)})",
  "    return rows",
].join("\n");

/** expectedBlockStats: the rows both functions should write for from..to, recomputed from the synthetic chain. */
export function expectedBlockStats(from: number, to: number): { block: number; tx_count: number; gas_used: number }[] {
  const chain = new SyntheticChain("ethereum");
  const rows = [];
  for (let n = from; n <= to; n++) {
    const b = chain.block(n, false)!;
    rows.push({ block: n, tx_count: b.transactions.length, gas_used: parseInt(b.gasUsed, 16) });
  }
  return rows;
}
