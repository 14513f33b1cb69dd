import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JsonRpcNode, type Json } from "./json-rpc-node";
import { freePort } from "./ports";

const REPO = join(import.meta.dir, "..", "..");
const GANACHE_CLI = join(REPO, ".cache/ganache/node_modules/ganache/dist/node/cli.js");

export const GANACHE_MNEMONIC = "test test test test test test test test test test test junk";
export const GANACHE_CHAIN_ID = 1337;
export const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

/**
 * TRANSFER_EMITTER_INIT: init code of a tiny contract written by hand (no solc here). Its
 * runtime emits `Transfer(msg.sender, to, amount)` (ERC-20 shape: LOG3 with the two addresses
 * as topics, the amount as data) for calldata `to (32 bytes) ++ amount (32 bytes)`:
 *   PUSH1 0x20 CALLDATALOAD PUSH1 0 MSTORE          ; mem[0..32] = amount
 *   PUSH1 0 CALLDATALOAD CALLER PUSH32 topic         ; topics: to, from, Transfer
 *   PUSH1 0x20 PUSH1 0 LOG3 STOP
 * The init code copies the 49-byte runtime (at offset 11) to memory and returns it.
 */
const RUNTIME = `602035600052600035337f${TRANSFER_TOPIC.slice(2)}60206000a300`;
export const TRANSFER_EMITTER_INIT = `0x603180600b6000396000f3${RUNTIME}`;


/**
 * GanacheNode is a real Ethereum JSON-RPC node (ganache 7 from the npm registry, installed by
 * `make deps` into .cache/ganache) on a free loopback port, with a fixed mnemonic and chain id
 * and instant mining (one block per transaction). It dies with the test process.
 */
export class GanacheNode extends JsonRpcNode {
  accounts: string[] = [];

  // The chain's database: ganache's own default is a folder in /tmp that only a clean exit
  // removes, and stop() kills it.
  private readonly dbDir = mkdtempSync(join(tmpdir(), "blockx-ganache-"));

  private constructor(port: number) {
    super(port);
  }

  static async start(): Promise<GanacheNode> {
    if (!existsSync(GANACHE_CLI)) throw new Error(`ganache is not installed at ${GANACHE_CLI}: run make deps`);
    const g = new GanacheNode(await freePort());
    g.accounts = (await g.launch(
      "ganache",
      [
        "/usr/bin/node", GANACHE_CLI,
        "--host", "127.0.0.1", "--port", String(g.port),
        "--chain.chainId", String(GANACHE_CHAIN_ID),
        "--wallet.mnemonic", GANACHE_MNEMONIC,
        "--miner.instamine", "eager",
        "--logging.quiet",
        "--database.dbPath", g.dbDir,
      ],
      "eth_accounts",
      60_000,
    )) as string[];
    return g;
  }

  /** deployEmitter deploys the Transfer emitter and returns its address. */
  async deployEmitter(): Promise<string> {
    const hash = await this.rpc("eth_sendTransaction", { from: this.accounts[0]!, data: TRANSFER_EMITTER_INIT, gas: "0x100000" });
    const receipt = (await this.rpc("eth_getTransactionReceipt", hash)) as { contractAddress: string; status: string };
    if (receipt.status !== "0x1") throw new Error("emitter deployment reverted");
    return receipt.contractAddress;
  }

  /**
   * mine adds `blocks` blocks: most with one transaction (a Transfer-emitting call or a plain
   * value transfer), every 10th with several transactions (mining paused while they are sent),
   * every 7th empty. Deterministic for a given emitter.
   */
  async mine(blocks: number, emitter: string): Promise<void> {
    const tx = (i: number): Json => {
      const from = this.accounts[i % this.accounts.length]!;
      const to = this.accounts[(i * 3 + 1) % this.accounts.length]!;
      if (i % 3 === 2) return { from, to, value: "0x" + (1000 + i).toString(16) };
      const data = "0x" + to.slice(2).padStart(64, "0") + (i * 1_000_003).toString(16).padStart(64, "0");
      return { from, to: emitter, data, gas: "0x30000" };
    };
    for (let b = 0; b < blocks; b++) {
      if (b % 7 === 6) {
        await this.rpc("evm_mine");
      } else if (b % 10 === 9) {
        await this.rpc("miner_stop");
        for (let k = 0; k < 4; k++) await this.rpc("eth_sendTransaction", tx(b * 4 + k));
        await this.rpc("miner_start");
      } else {
        await this.rpc("eth_sendTransaction", tx(b));
      }
    }
  }

  override async stop(): Promise<void> {
    await super.stop();
    rmSync(this.dbDir, { recursive: true, force: true });
  }
}
