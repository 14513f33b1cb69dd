import { existsSync } from "node:fs";
import { join } from "node:path";
import { JsonRpcNode } from "./json-rpc-node";
import { freePort } from "./ports";

const REPO = join(import.meta.dir, "..", "..");
export const ANVIL_BIN = join(REPO, ".cache/anvil/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");

/** anvil's first two funded, unlocked dev accounts (the same for every anvil): a transfer between them marks a reorganised block. */
export const ANVIL_DEV_ACCOUNTS = ["0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"] as const;

/** anvil's default chain id (31337). */
export const ANVIL_CHAIN_ID = 31337;


/** The fields of a block the chain tests look at. */
export interface AnvilBlock {
  readonly number: string;
  readonly hash: string;
  readonly parentHash: string;
}

export interface AnvilOptions {
  /** The chain id the node reports (default ANVIL_CHAIN_ID). */
  readonly chainId?: number;
  /** Seconds between automatically mined blocks; absent: a block only when asked (anvil_mine) or per transaction. */
  readonly blockTimeSeconds?: number;
}

/**
 * AnvilNode is Foundry's anvil (npm `@foundry-rs/anvil-linux-amd64`, installed by `make deps`
 * into .cache/anvil) on a free loopback port: a real Ethereum JSON-RPC node whose chain can be
 * reorganised on request (`anvil_reorg`) and cut back (`anvil_rollback`). In memory, silent, and
 * tied to the test process (`setpriv --pdeathsig KILL`): a test that dies takes it along.
 */
export class AnvilNode extends JsonRpcNode {
  private constructor(port: number) {
    super(port);
  }

  static async start(opts: AnvilOptions = {}): Promise<AnvilNode> {
    if (!existsSync(ANVIL_BIN)) throw new Error(`anvil is not installed at ${ANVIL_BIN}: run make deps`);
    const a = new AnvilNode(await freePort());
    const args = ["--host", "127.0.0.1", "--port", String(a.port), "--silent", "--chain-id", String(opts.chainId ?? ANVIL_CHAIN_ID)];
    if (opts.blockTimeSeconds !== undefined) args.push("--block-time", String(opts.blockTimeSeconds));
    await a.launch("anvil", [ANVIL_BIN, ...args], "eth_chainId", 30_000);
    return a;
  }

  /** mine adds `blocks` empty blocks. */
  async mine(blocks: number): Promise<void> {
    await this.rpc("anvil_mine", "0x" + blocks.toString(16));
  }

  private transfers = 0;

  /**
   * reorg replaces the last `depth` blocks with new ones at the same heights, the first of them
   * holding a transfer: without one, anvil may mine the very same empty blocks again (the same
   * hashes: seen within a second of their first mining), and nothing would be reorganised.
   */
  async reorg(depth: number): Promise<void> {
    const transfer = { from: ANVIL_DEV_ACCOUNTS[0], to: ANVIL_DEV_ACCOUNTS[1], value: "0x" + (++this.transfers).toString(16) };
    await this.rpc("anvil_reorg", depth, [[transfer, 0]]);
  }

  /** rollback drops the last `depth` blocks (the head goes back). */
  async rollback(depth: number): Promise<void> {
    await this.rpc("anvil_rollback", depth);
  }

  /** hashAt: block n's hash, null when the chain has no block n. */
  async hashAt(n: number): Promise<string | null> {
    const b = (await this.rpc("eth_getBlockByNumber", "0x" + n.toString(16), false)) as AnvilBlock | null;
    return b?.hash ?? null;
  }

  async block(n: number): Promise<AnvilBlock> {
    const b = (await this.rpc("eth_getBlockByNumber", "0x" + n.toString(16), false)) as AnvilBlock | null;
    if (b === null) throw new Error(`anvil has no block ${n}`);
    return b;
  }
}
