import { writeBlockStore } from "../runtime/chains/localtestservice/block-text-store";
import { SyntheticChain } from "../runtime/chains/localtestservice/synthetic-chain";
import { flagValue } from "./args";
import type { Command } from "./command";
import { UsageError } from "./usage-error";

const USAGE = "usage: blockx localchain render --chain NAME --from N --to M --out FILE";

function blockArg(name: string, text: string | undefined): number {
  const n = Number(text);
  if (text === undefined || text === "" || !Number.isSafeInteger(n) || n < 0) throw new UsageError(`--${name} must be a block number, got ${JSON.stringify(text ?? "")}\n${USAGE}`);
  return n;
}

/**
 * `blockx localchain render` writes a block store of the local test chain: a range of blocks
 * rendered once, which Workers given LOCALTESTSERVICE_BLOCK_STORE serve as stored text (as a block
 * database would) instead of generating each block again.
 */
export const localchainCommand: Command = {
  name: "localchain",
  summary: "tools for the local test chain: localchain render --chain NAME --from N --to M --out FILE",
  vars: {},
  flags: { chain: "value", from: "value", to: "value", out: "value" },
  positionals: { optional: ["render"] },
  async run(args) {
    if (args.positional[0] !== "render") throw new UsageError(USAGE);
    const values = { chain: flagValue(args, "chain"), from: flagValue(args, "from"), to: flagValue(args, "to"), out: flagValue(args, "out") };
    if (!values.chain) throw new UsageError(`--chain is required\n${USAGE}`);
    if (!values.out) throw new UsageError(`--out is required\n${USAGE}`);
    const from = blockArg("from", values.from);
    const to = blockArg("to", values.to);
    if (to < from) throw new UsageError(`--to (${to}) is below --from (${from})`);
    const chain = new SyntheticChain(values.chain);
    if (to > chain.head()) throw new UsageError(`--to (${to}) is above the chain head (${chain.head()})`);
    const t0 = performance.now();
    const { bytes } = writeBlockStore(values.out, chain, from, to);
    console.log(`rendered blocks ${from}..${to} of ${values.chain} to ${values.out}: ${(bytes / 1e6).toFixed(1)} MB in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  },
};
