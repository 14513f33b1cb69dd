import { existsSync } from "node:fs";
import { envVar, intSchema, loadEnvConfig, type EnvValues } from "../common/config/env-config";
import { loadChainsConfig } from "../common/config/chains-config";
import { tableStoreVars } from "../outputs/stores/table-store-config";
import { ioVars, localTestChainEnabledVar } from "../runtime/io/io-config";
import { flagValue } from "./args";
import type { Command } from "./command";
import { EXIT } from "./client/exit-codes";
import { UsageError } from "./usage-error";

const vars = {
  ...tableStoreVars,
  chainsConfig: ioVars.chainsConfig,
  rpcMaxAnswerBytes: ioVars.rpcMaxAnswerBytes,
  localTestChainEnabled: localTestChainEnabledVar("false"),
  localTestChainHead: ioVars.localTestChainHead,
  verifyWindowBlocks: envVar(
    "VERIFY_WINDOW_BLOCKS",
    "2000",
    "an integer from 1 to 10000",
    "blocks verify reads at a time: one store query and one batch of block headers (the chain client sends it as JSON-RPC batches of maxBatchSize)",
    intSchema(1, 10_000),
  ),
  verifyMaxPrinted: envVar("VERIFY_MAX_PRINTED", "100", "an integer from 0 to 1000000", "findings of each kind printed at most (the counts cover all)", intSchema(0, 1_000_000)),
};

const USAGE = `usage: blockx verify TABLE --chain CHAIN [--blocks A..B] [--json] [--flags]

  TABLE        a block table (block_table_write) in the table store (TABLE_STORE_URL, else TABLE_STORE_PATH)
  --chain      the chain whose rows to check (CHAINS_CONFIG names its node)
  --blocks     the range to check (default: the lowest to the highest block the table holds for the chain)
  --json       print the report as one JSON object

Checks that every block of the range has its scope's rows, that each scope's recorded block hash
(_block_hash) is the canonical block's hash now (asked of the chain's node, in batches, parent links
checked), and that no scope is written twice; prints what is missing, stale or doubled, by block.
Exit 0: nothing found; 1: something is missing, stale or doubled; 2: usage or configuration error;
3: the table store or the chain's node could not be read.`;

/** parseBlocks: `A..B` as a range of block numbers (a usage error otherwise). */
export function parseBlocks(text: string): { fromBlock: number; toBlock: number } {
  const m = /^(\d+)\.\.(\d+)$/.exec(text.trim());
  const [a, b] = m ? [Number(m[1]), Number(m[2])] : [NaN, NaN];
  if (!m || !Number.isSafeInteger(a) || !Number.isSafeInteger(b) || b < a) throw new UsageError(`--blocks: expected A..B with A <= B (block numbers), got ${JSON.stringify(text)}`);
  return { fromBlock: a, toBlock: b };
}

/**
 * `blockx verify TABLE --chain C [--blocks A..B]` checks a block table against the chain, window
 * by window (VERIFY_WINDOW_BLOCKS): the store's scopes starting in the window (scopeCounts) and the
 * chain's headers of the window (blockdb's checked reads, one batch) go to TableVerification, which
 * decides; this command only reads and prints.
 */
export const verifyCommand: Command = {
  name: "verify",
  summary: "check a block table against the chain: every block has rows, each recorded block hash is canonical, no scope written twice: verify TABLE --chain C [--blocks A..B]",
  usage: USAGE,
  vars,
  flags: { chain: "value", blocks: "value", json: "bool" },
  positionals: { required: ["TABLE"] },
  async run(args) {
    const table = args.positional[0]!;
    const chain = flagValue(args, "chain");
    if (!chain) throw new UsageError(`--chain is required\n${USAGE}`);
    const asked = flagValue(args, "blocks");
    const range = asked === undefined ? undefined : parseBlocks(asked);
    const v = loadEnvConfig(vars, process.env, args.configArgv);
    if (v.tableStoreUrl.trim() === "" && !existsSync(v.tableStorePath)) {
      throw new UsageError(`no table store at ${v.tableStorePath} (set TABLE_STORE_PATH to the Workers' file, or TABLE_STORE_URL to their store)`);
    }
    const [{ runVerify }] = await Promise.all([import("./verify-run")]);
    process.exitCode = await runVerify({ table, chain, range, json: args.flags.has("json"), config: v, chains: loadChainsConfig(v.chainsConfig) });
  },
};

/** VerifyConfig: verify's variables, read. */
export type VerifyConfig = EnvValues<typeof vars>;
export { EXIT };
