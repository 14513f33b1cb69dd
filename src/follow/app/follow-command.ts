import { hostname, userInfo } from "node:os";
import { envVar, intSchema, loadEnvConfig, stringSchema, type EnvValues } from "../../common/config/env-config";
import { loadChainsConfig } from "../../common/config/chains-config";
import { commonVars } from "../../common/config/common-vars";
import { tableNameProblem } from "../../outputs/stores/table-schema";
import { clientVars } from "../../sdk/client-config";
import { ioVars, localTestChainEnabledVar } from "../../runtime/io/io-config";
import { flagValue } from "../../cli/args";
import type { Command } from "../../cli/command";
import { functionRefFrom } from "../../cli/client/task-from-args";
import { UsageError } from "../../cli/usage-error";

/** optionalIntSchema: an integer from min to max, or empty (null). */
function optionalIntSchema(min: number, max: number) {
  return stringSchema()
    .refine((s) => s === "" || (/^\d{1,16}$/.test(s) && Number(s) >= min && Number(s) <= max))
    .transform((s) => (s === "" ? null : Number(s)));
}

export const followVars = {
  followTable: envVar("FOLLOW_TABLE", "", "a table name, or empty", "the table to keep current when no TABLE is given (the systemd unit's way)", stringSchema()),
  followChain: envVar("FOLLOW_CHAIN", "", "a chain name, or empty", "the chain to follow when no --chain is given", stringSchema()),
  followFunction: envVar("FOLLOW_FUNCTION", "", "a file or a FUNCTIONS_DIR name, or empty", "the function when no --function is given", stringSchema()),
  followEntry: envVar("FOLLOW_ENTRY", "main", "a Python identifier", "the entry function when no --entry is given", stringSchema().refine((s) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(s))),
  followFrom: envVar("FOLLOW_FROM", "", "a block number, or empty", "the first block when no --from is given and the table holds none of the chain's", optionalIntSchema(0, Number.MAX_SAFE_INTEGER)),
  followConfirmations: envVar(
    "FOLLOW_CONFIRMATIONS",
    "0",
    "an integer from 0 to 10000",
    "write only blocks at least this many below the head (0: each block as soon as it is seen, its rows replaced if a reorganisation orphans it)",
    intSchema(0, 10_000),
  ),
  followMaxRangeBlocks: envVar("FOLLOW_MAX_RANGE_BLOCKS", "100", "an integer from 1 to 2000", "blocks per task while catching up (one call per block); block by block once level with the head", intSchema(1, 2000)),
  followPollMs: envVar("FOLLOW_POLL_MS", "1000", "an integer from 10 to 600000", "how often the chain's head is asked (eth_blockNumber); about the chain's block time", intSchema(10, 600_000)),
  followRetryMs: envVar("FOLLOW_RETRY_MS", "2000", "an integer from 10 to 600000", "wait after a failed read, task or rewind before trying again", intSchema(10, 600_000)),
  followFinalityDepth: envVar(
    "FOLLOW_FINALITY_DEPTH",
    "",
    "an integer from 1 to 5000, or empty",
    "a reorganisation deeper than this stops the follower (empty: the chain's finalityDepth in CHAINS_CONFIG, else its chain id's known default, else IO_FINALITY_DEPTH)",
    optionalIntSchema(1, 5000),
  ),
  chainsConfig: ioVars.chainsConfig,
  rpcMaxAnswerBytes: ioVars.rpcMaxAnswerBytes,
  ioFinalityDepth: ioVars.ioFinalityDepth,
  localTestChainEnabled: localTestChainEnabledVar("false"),
  localTestChainHead: ioVars.localTestChainHead,
  logLevel: commonVars.logLevel,
};

const vars = { ...clientVars, ...followVars };
export type FollowConfig = EnvValues<typeof vars>;

/** loadFollowConfig reads every variable `blockx follow` reads (its environment file's loader). */
export function loadFollowConfig(env: Readonly<Record<string, string | undefined>>): FollowConfig {
  return loadEnvConfig(vars, env);
}

const USAGE = `usage: blockx follow TABLE --chain CHAIN --function FILE|NAME [--entry NAME] [--from BLOCK] [--flags]
       blockx follow   (with FOLLOW_TABLE, FOLLOW_CHAIN, FOLLOW_FUNCTION[, FOLLOW_FROM] set: the systemd unit)

  TABLE        the block table to keep current (block_table_write), in the Workers' table store
  --chain      the chain to follow (CHAINS_CONFIG names its node; the Workers must route it too)
  --function   a Python file (sent inline) or a function name from the Workers' FUNCTIONS_DIR
  --entry      entry function (default main)
  --from       the first block to write when the table holds none of the chain's (required then);
               otherwise the follower resumes after the last block the table's scope ledger holds

Keeps a block table current as the chain grows: catches up in tasks of FOLLOW_MAX_RANGE_BLOCKS
blocks on the block cluster, then follows block by block. Its position is the table's scope ledger,
written in the same transaction as each block's rows, so a restart resumes exactly once. Before
each range it checks that the last block written is still canonical; when a reorganisation orphaned
written blocks it finds the fork point, removes the orphaned blocks' rows in one transaction, and
writes the canonical blocks. A reorganisation deeper than the finality depth stops it (exit 1) with
the blocks named. Its status (position, head, lag, last reorganisation) is in \`blockx tasks\` and
the dashboard. Runs until SIGTERM or SIGINT (exit 0); deploy/systemd/blockx-follow@.service runs one.`;

/** `blockx follow TABLE --chain C --function F [--from N]`: see USAGE. */
export const followCommand: Command = {
  name: "follow",
  summary: "keep a block table current as the chain grows and reorganises: follow TABLE --chain C --function F [--from N]",
  usage: USAGE,
  vars,
  flags: { chain: "value", function: "value", entry: "value", from: "value" },
  positionals: { optional: ["TABLE"] },
  async run(args) {
    const config = loadEnvConfig(vars, process.env, args.configArgv);
    const table = args.positional[0] ?? config.followTable;
    if (table === "") throw new UsageError(`TABLE (or FOLLOW_TABLE) is required\n${USAGE}`);
    const problem = tableNameProblem(table);
    if (problem) throw new UsageError(`TABLE: ${problem}`);
    const chain = flagValue(args, "chain") ?? config.followChain;
    if (!chain) throw new UsageError(`--chain (or FOLLOW_CHAIN) is required\n${USAGE}`);
    const fnSpec = flagValue(args, "function") ?? config.followFunction;
    if (!fnSpec) throw new UsageError(`--function (or FOLLOW_FUNCTION) is required\n${USAGE}`);
    const fromFlag = flagValue(args, "from");
    // The flag is checked here; FOLLOW_FROM was parsed by its schema.
    if (fromFlag !== undefined && !/^\d+$/.test(fromFlag)) throw new UsageError(`--from: expected a block number, got ${JSON.stringify(fromFlag)}`);
    if (fromFlag !== undefined && !Number.isSafeInteger(Number(fromFlag))) throw new UsageError(`--from: ${fromFlag} is too large`);
    const from = fromFlag !== undefined ? Number(fromFlag) : (config.followFrom ?? undefined);
    const fn = functionRefFrom(fnSpec, flagValue(args, "entry") ?? config.followEntry);
    const { runFollow } = await import("./follow-run");
    const code = await runFollow({ table, chain, fn, from, config, chains: loadChainsConfig(config.chainsConfig), owner: `${userInfo().username}@${hostname()}` });
    process.exitCode = code;
    // Everything is closed; a library's handle (gRPC, etcd keep-alives) must not hold the process open.
    setTimeout(() => process.exit(code), 200).unref();
  },
};
