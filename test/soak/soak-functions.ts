import { SyntheticChain, TRANSFER_TOPIC } from "../../src/runtime/chains/localtestservice/synthetic-chain";

/** A row as the checker compares it: user columns only. */
export type SoakRow = Record<string, string | number>;

/**
 * SoakTable: a table the soak backfills, with the Python function that fills it (one call per
 * block, reading the chain through the Worker's IO path) and the same rows recomputed here,
 * independently, from SyntheticChain.
 */
export interface SoakTable {
  readonly table: string;
  readonly source: string;
  expectedRows(chain: SyntheticChain, block: number): SoakRow[];
}

/** One row per block: transactions and gas used. */
export const BLOCK_STATS: SoakTable = {
  table: "soak_block_stats",
  source: [
    "def main(ctx, input):",
    "    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': input['chain'], 'number': input['blockNumber'], 'full': False})",
    "    return [{'block': int(b['number'], 16), 'tx_count': len(b['transactions']), 'gas_used': int(b['gasUsed'], 16), 'block_hash': b['hash']}]",
  ].join("\n"),
  expectedRows(chain, n) {
    const b = chain.block(n, false)!;
    return [{ block: n, tx_count: b.transactions.length, gas_used: parseInt(b.gasUsed, 16), block_hash: b.hash }];
  },
};

/** One row per ERC-20 Transfer log: several rows per block, so a duplicated block shows. */
export const ERC20_TRANSFERS: SoakTable = {
  table: "soak_erc20_transfers",
  source: [
    `TRANSFER = '${TRANSFER_TOPIC}'`,
    "def main(ctx, input):",
    "    n = input['blockNumber']",
    "    receipts = ctx.io('localtestservice', 'eth_getBlockReceipts', {'chain': input['chain'], 'number': n})",
    "    rows = []",
    "    for r in receipts:",
    "        for log in r['logs']:",
    "            t = log['topics']",
    "            if len(t) == 3 and t[0] == TRANSFER:",
    "                rows.append({'block': n, 'log_index': int(log['logIndex'], 16), 'token': log['address'],",
    "                             'sender': '0x' + t[1][-40:], 'recipient': '0x' + t[2][-40:], 'amount': str(int(log['data'], 16))})",
    "    return rows",
  ].join("\n"),
  expectedRows(chain, n) {
    const rows: SoakRow[] = [];
    for (const r of chain.blockReceipts(n) ?? []) {
      for (const log of r.logs) {
        const t = log.topics;
        if (t.length !== 3 || t[0] !== TRANSFER_TOPIC) continue;
        rows.push({
          block: n,
          log_index: parseInt(log.logIndex, 16),
          token: log.address,
          sender: `0x${t[1]!.slice(-40)}`,
          recipient: `0x${t[2]!.slice(-40)}`,
          amount: BigInt(log.data).toString(),
        });
      }
    }
    return rows;
  },
};
