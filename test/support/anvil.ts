import { existsSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "./ports";

const REPO = join(import.meta.dir, "..", "..");
export const ANVIL_BIN = join(REPO, ".cache/anvil/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");

/** anvil's default chain id (31337). */
export const ANVIL_CHAIN_ID = 31337;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

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
export class AnvilNode {
  private proc: ReturnType<typeof Bun.spawn> | undefined;
  private nextId = 1;

  private constructor(readonly port: number) {}

  static async start(opts: AnvilOptions = {}): Promise<AnvilNode> {
    if (!existsSync(ANVIL_BIN)) throw new Error(`anvil is not installed at ${ANVIL_BIN}: run make deps`);
    const a = new AnvilNode(await freePort());
    const args = ["--host", "127.0.0.1", "--port", String(a.port), "--silent", "--chain-id", String(opts.chainId ?? ANVIL_CHAIN_ID)];
    if (opts.blockTimeSeconds !== undefined) args.push("--block-time", String(opts.blockTimeSeconds));
    a.proc = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", ANVIL_BIN, ...args], { stdout: "ignore", stderr: "pipe" });
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        await a.rpc("eth_chainId");
        return a;
      } catch (e) {
        if (a.proc.exitCode !== null || Date.now() > deadline) {
          const err = await new Response(a.proc.stderr as ReadableStream).text().catch(() => "");
          await a.stop();
          throw new Error(`anvil did not start on port ${a.port}: ${(e as Error).message} ${err}`);
        }
        await Bun.sleep(50);
      }
    }
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** rpc: one JSON-RPC request to the node by plain fetch (independent of BlockX's client). Params are positional. */
  async rpc(method: string, ...params: Json[]): Promise<Json> {
    const res = await fetch(this.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: this.nextId++, method, params }) });
    const body = (await res.json()) as { result?: Json; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result ?? null;
  }

  async head(): Promise<number> {
    return parseInt((await this.rpc("eth_blockNumber")) as string, 16);
  }

  /** mine adds `blocks` empty blocks. */
  async mine(blocks: number): Promise<void> {
    await this.rpc("anvil_mine", "0x" + blocks.toString(16));
  }

  /** reorg replaces the last `depth` blocks with new ones at the same heights (new hashes). */
  async reorg(depth: number): Promise<void> {
    await this.rpc("anvil_reorg", depth, []);
  }

  /** rollback drops the last `depth` blocks (the head goes back). */
  async rollback(depth: number): Promise<void> {
    await this.rpc("anvil_rollback", depth);
  }

  async block(n: number): Promise<AnvilBlock> {
    const b = (await this.rpc("eth_getBlockByNumber", "0x" + n.toString(16), false)) as AnvilBlock | null;
    if (b === null) throw new Error(`anvil has no block ${n}`);
    return b;
  }

  async stop(): Promise<void> {
    if (this.proc) {
      this.proc.kill("SIGKILL");
      await this.proc.exited;
      this.proc = undefined;
    }
  }
}
