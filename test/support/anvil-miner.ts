import type { AnvilNode } from "./anvil";

/** MinerFigures: blocks mined by the timer, at what rate, and the ticks that came late. */
export interface MinerFigures {
  readonly blocks: number;
  readonly perSecond: number;
  /** Ticks that found more than one block due (the process was late) and mined them at once. */
  readonly lateTicks: number;
  readonly mostAtOnce: number;
}

/**
 * AnvilMiner mines a block on anvil every `blockTimeMs` from its own timer (anvil_mine): anvil's
 * `--block-time 0.1` takes fractions of a second, but under interval mining (anvil 1.7.1) an
 * anvil_rollback left a hole the node answered null for. A tick that comes late (the process is
 * busy) mines every block due at once, so the chain keeps its rate on average. Every call that
 * changes the chain goes through `onChain`, one at a time: a reorganisation never interleaves with
 * a mined block.
 */
export class AnvilMiner {
  private mining = false;
  private done: Promise<void> = Promise.resolve();
  private readonly mined = { blocks: 0, lateTicks: 0, mostAtOnce: 0, ms: 0 };
  private chainOps: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly anvil: AnvilNode,
    readonly blockTimeMs: number,
  ) {}

  start(): void {
    this.mining = true;
    this.done = this.loop();
  }

  /** stop ends the mining (after the block being mined) and gives the figures. */
  async stop(): Promise<MinerFigures> {
    this.mining = false;
    await this.done;
    return this.figures();
  }

  figures(): MinerFigures {
    const m = this.mined;
    return { blocks: m.blocks, perSecond: m.ms > 0 ? Math.round((10 * m.blocks) / (m.ms / 1000)) / 10 : 0, lateTicks: m.lateTicks, mostAtOnce: m.mostAtOnce };
  }

  /** onChain runs `op` (a reorganisation, a rollback) between two mined blocks, never during one. */
  onChain<T>(op: () => Promise<T>): Promise<T> {
    const p = this.chainOps.then(op);
    this.chainOps = p.catch(() => {});
    return p;
  }

  private async loop(): Promise<void> {
    const t0 = performance.now();
    while (this.mining) {
      const due = Math.floor((performance.now() - t0) / this.blockTimeMs) - this.mined.blocks;
      if (due > 0) {
        await this.onChain(() => this.anvil.mine(due));
        this.mined.blocks += due;
        if (due > 1) this.mined.lateTicks++;
        this.mined.mostAtOnce = Math.max(this.mined.mostAtOnce, due);
      }
      await Bun.sleep(Math.max(1, t0 + (this.mined.blocks + 1) * this.blockTimeMs - performance.now()));
    }
    this.mined.ms = performance.now() - t0;
  }
}
