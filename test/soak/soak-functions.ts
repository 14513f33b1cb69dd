import { SyntheticChain, TRANSFER_TOPIC } from "../../src/runtime/chains/localtestservice/synthetic-chain";

/** A row as the checker compares it: user columns only. */
export type SoakRow = Record<string, string | number>;

/**
 * The columns every soak function adds to each row: the run that computed it (`ctx.run`: the task
 * id and the generation of its run), so the checker can tell a stale run's rows and a second run's.
 * They are not part of a row's value (expectedRows leaves them out).
 */
export const RUN_TASK_COLUMN = "run_task";
export const RUN_GEN_COLUMN = "run_gen";
const STAMP = `'${RUN_TASK_COLUMN}': ctx.run['task_id'], '${RUN_GEN_COLUMN}': ctx.run['generation']`;

/**
 * How a table is written: `block` one call per block (block_table_write: rows replaced per block),
 * `bundle` one call per bundle of `bundleSize` blocks (block_bundle, block_table_write: replaced per
 * bundle), `normal` one call per block appended (normal_table_write: a call's rows replace the same
 * call's earlier rows of the same task id).
 */
export type SoakTableKind = "block" | "bundle" | "normal";

/**
 * SoakTable: a table the soak backfills, with the Python function that fills it (reading the chain
 * through the Worker's IO path, stamping each row with its run) and the same rows recomputed here,
 * independently, from SyntheticChain.
 */
export interface SoakTable {
  readonly table: string;
  readonly kind: SoakTableKind;
  /** bundle only: blocks per call. */
  readonly bundleSize?: number;
  readonly source: string;
  expectedRows(chain: SyntheticChain, block: number): SoakRow[];
}

function blockStats(chain: SyntheticChain, n: number): SoakRow[] {
  const b = chain.block(n, false)!;
  return [{ block: n, tx_count: b.transactions.length, gas_used: parseInt(b.gasUsed, 16), block_hash: b.hash }];
}

/** One row per block: transactions and gas used. */
export const BLOCK_STATS: SoakTable = {
  table: "soak_block_stats",
  kind: "block",
  source: [
    "def main(ctx, input):",
    "    b = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': input['chain'], 'number': input['blockNumber'], 'full': False})",
    `    return [{'block': int(b['number'], 16), 'tx_count': len(b['transactions']), 'gas_used': int(b['gasUsed'], 16), 'block_hash': b['hash'], ${STAMP}}]`,
  ].join("\n"),
  expectedRows: blockStats,
};

/** One row per ERC-20 Transfer log: several rows per block, so a duplicated block shows. */
export const ERC20_TRANSFERS: SoakTable = {
  table: "soak_erc20_transfers",
  kind: "block",
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
    `                             'sender': '0x' + t[1][-40:], 'recipient': '0x' + t[2][-40:], 'amount': str(int(log['data'], 16)), ${STAMP}})`,
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

/** One row per block, written a bundle of blocks per call (its rows replaced as one scope). */
export const BUNDLE_STATS: SoakTable = {
  table: "soak_bundle_stats",
  kind: "bundle",
  bundleSize: 5,
  source: [
    "def main(ctx, input):",
    "    blocks = ctx.io_many([('localtestservice', 'eth_getBlockByNumber', {'chain': input['chain'], 'number': n, 'full': False}) for n in range(input['fromBlock'], input['toBlock'] + 1)])",
    `    return [{'block': int(b['number'], 16), 'tx_count': len(b['transactions']), 'gas_used': int(b['gasUsed'], 16), 'block_hash': b['hash'], ${STAMP}} for b in blocks]`,
  ].join("\n"),
  expectedRows: blockStats,
};

/** One row per block (BLOCK_STATS' function) appended to a normal table (no scope: a call's rows are replaced by task id and call). */
export const NORMAL_STATS: SoakTable = {
  table: "soak_normal_stats",
  kind: "normal",
  source: BLOCK_STATS.source,
  expectedRows: blockStats,
};

export const SOAK_TABLES: readonly SoakTable[] = [BLOCK_STATS, ERC20_TRANSFERS, BUNDLE_STATS, NORMAL_STATS];

export function tableNamed(name: string): SoakTable {
  const t = SOAK_TABLES.find((s) => s.table === name);
  if (!t) throw new Error(`no soak table ${name}`);
  return t;
}

/**
 * padded: `source` with a comment that makes it `bytes` long. The soak's TCP relays cannot read a
 * request (TLS), only its size: SubmitTask requests padded to one size and SubmitTasks requests to a
 * larger one are what the lost-answer faults aim at (no other request of a client comes near).
 */
export function padded(source: string, bytes: number): string {
  const pad = Math.max(0, bytes - source.length - 3);
  return `# ${"p".repeat(pad)}\n${source}`;
}
