import { randomBytes } from "node:crypto";
import { CoreDriver } from "../../common/core/core-driver";
import type { Logger } from "../../common/logging/logger";
import { FunctionCallConfig, type FunctionRef, Task } from "../../gen/worker/v1/worker";
import type { BlockReader } from "../../runtime/chains/blockdb/block-reader";
import type { BlockxClient } from "../../sdk/blockx-client";
import { FollowerCore, type FollowerOptions } from "../core/follower-core";
import type { FollowerEvent } from "../core/follower-events";
import type { FollowerInstruction } from "../core/follower-instructions";
import type { FollowerStatus } from "../core/follower-status";
import type { FollowLedger } from "./follow-ledger";

export interface FollowRunnerDeps {
  readonly table: string;
  readonly chain: string;
  readonly fn: FunctionRef;
  readonly opts: FollowerOptions;
  /** How often the chain's head is asked (eth_blockNumber). */
  readonly pollMs: number;
  readonly client: Pick<BlockxClient, "runTask">;
  readonly reader: Pick<BlockReader, "head" | "headers">;
  readonly ledger: FollowLedger;
  /** Where the status goes (etcd for `blockx tasks` and the dashboard), after every change at most every statusEveryMs. */
  readonly publish: (status: FollowerStatus) => void;
  readonly statusEveryMs?: number;
  readonly owner: string;
  readonly log: Logger;
}

/**
 * FollowRunner is FollowerCore's adapter: it polls the chain's head, reads headers through the
 * checked block reader, writes ranges as block_table tasks on the block cluster (the SDK resubmits
 * a task whose Worker is lost; fencing keeps the rows exactly once), reads back what the table's
 * scope ledger recorded, rewinds the table after a reorganisation, and publishes the status.
 * `run` resolves with the reason the follower stopped (a reorganisation deeper than the finality
 * depth), or null when `stop` was asked.
 */
export class FollowRunner {
  private readonly core: FollowerCore;
  private readonly driver: CoreDriver<FollowerEvent, FollowerInstruction>;
  private poll: ReturnType<typeof setInterval> | null = null;
  private statusTimer: ReturnType<typeof setInterval> | null = null;
  private polling = false;
  private stopped = false;
  private finish: (reason: string | null) => void = () => {};
  private inFlight: Promise<void> = Promise.resolve();
  private readonly startedAtMs = Date.now();
  private lastPublished = "";

  private constructor(
    private readonly d: FollowRunnerDeps,
    tail: ConstructorParameters<typeof FollowerCore>[1],
  ) {
    this.core = new FollowerCore(d.opts, tail);
    this.driver = new CoreDriver(this.core, {
      name: "follower",
      carryOut: (i) => this.carryOut(i),
      nowMs: () => performance.now(),
      timeAdvanced: { type: "timeAdvanced" },
      log: d.log,
    });
  }

  /** open reads where the table's ledger leaves off (the remembered tail) and makes the runner. */
  static async open(d: FollowRunnerDeps): Promise<FollowRunner> {
    const tail = await d.ledger.tail(d.opts.finalityDepth + d.opts.maxRangeBlocks + 1);
    const r = new FollowRunner(d, tail);
    const s = r.core.status();
    d.log.info({ component: "follow", table: d.table, chain: d.chain, position: s.position }, s.position >= d.opts.startBlock ? `resuming after block ${s.position}, the last the table's ledger holds` : `starting at block ${d.opts.startBlock}`);
    return r;
  }

  run(): Promise<string | null> {
    const done = new Promise<string | null>((resolve) => (this.finish = resolve));
    this.poll = setInterval(() => void this.pollHead(), this.d.pollMs);
    this.statusTimer = setInterval(() => this.publishStatus(), this.d.statusEveryMs ?? 500);
    void this.pollHead();
    return done;
  }

  /**
   * stop: no new work; waits up to `waitMs` for the instruction in flight (a task under way may take
   * longer, as may one whose cluster is away: its outcome is durable or not, and the ledger says
   * which at the next start).
   */
  async stop(waitMs = 5000): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.halt();
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.inFlight, new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
    this.publishStatus(true);
    this.finish(null);
  }

  status(): FollowerStatus {
    const s = this.core.status();
    const wall = (monoMs: number) => Math.round(Date.now() - (performance.now() - monoMs));
    return {
      table: this.d.table,
      chain: this.d.chain,
      state: s.state,
      position: s.position,
      head: s.head,
      lag: s.lag,
      confirmations: this.d.opts.confirmations,
      lastReorg: s.lastReorg === null ? null : { ...s.lastReorg, atMs: wall(s.lastReorg.atMs) },
      reorgs: s.reorgs,
      blocksWritten: s.blocksWritten,
      stoppedReason: s.stoppedReason?.slice(0, 2000) ?? null,
      lastError: s.lastError?.slice(0, 2000) ?? null,
      owner: this.d.owner,
      startedAtMs: this.startedAtMs,
      updatedAtMs: Date.now(),
    };
  }

  private halt(): void {
    if (this.poll) clearInterval(this.poll);
    if (this.statusTimer) clearInterval(this.statusTimer);
    this.poll = this.statusTimer = null;
    this.driver.stop();
  }

  private publishStatus(force = false): void {
    const s = this.status();
    const key = JSON.stringify({ ...s, updatedAtMs: 0 });
    if (!force && key === this.lastPublished) return;
    this.lastPublished = key;
    this.d.publish(s);
  }

  private async pollHead(): Promise<void> {
    if (this.polling || this.stopped) return;
    this.polling = true;
    try {
      const head = await this.d.reader.head(this.d.chain);
      if (!this.stopped) this.driver.send({ type: "headSeen", head });
    } catch (e) {
      this.d.log.warn({ component: "follow", chain: this.d.chain, err: (e as Error).message }, "could not read the chain's head; asking again");
    } finally {
      this.polling = false;
    }
  }

  private carryOut(i: FollowerInstruction): void {
    if (i.type === "stop") {
      this.stopped = true;
      this.halt();
      this.d.log.error({ component: "follow", table: this.d.table, chain: this.d.chain }, i.reason);
      this.publishStatus(true);
      this.finish(i.reason);
      return;
    }
    const t0 = performance.now();
    this.inFlight = this.outcome(i).then((e) => {
      this.d.log.debug({ component: "follow", step: i.type, outcome: e.type, ms: Math.round((performance.now() - t0) * 10) / 10 }, "follower step done");
      if (this.stopped) return;
      if (e.type === "rewound") this.d.log.info({ component: "follow", table: this.d.table, chain: this.d.chain, forkBlock: e.forkBlock }, `rewound the table to block ${e.forkBlock} after a reorganisation`);
      this.driver.send(e);
      this.publishStatus();
    });
  }

  /** outcome carries out one instruction and says what happened, as the core's event. */
  private async outcome(i: Exclude<FollowerInstruction, { type: "stop" }>): Promise<FollowerEvent> {
    const log = this.d.log;
    switch (i.type) {
      case "readHeaders":
        try {
          return { type: "headersRead", headers: await this.d.reader.headers(this.d.chain, i.fromBlock, i.toBlock) };
        } catch (e) {
          log.warn({ component: "follow", fromBlock: i.fromBlock, toBlock: i.toBlock, err: (e as Error).message }, "could not read the chain's headers");
          return { type: "readFailed", why: (e as Error).message };
        }
      case "writeRange":
        try {
          const t0 = performance.now();
          const run = await this.d.client.runTask(this.task(i.fromBlock, i.toBlock), { cluster: "block" });
          log.debug({ component: "follow", step: "runTask", fromBlock: i.fromBlock, toBlock: i.toBlock, ms: Math.round((performance.now() - t0) * 10) / 10 }, "task run");
          if (!run.succeeded) {
            const why = `task ${run.taskId} ${run.state}: ${run.result.snapshot?.error?.message ?? "no error given"}`;
            log.warn({ component: "follow", fromBlock: i.fromBlock, toBlock: i.toBlock }, why);
            return { type: "rangeFailed", fromBlock: i.fromBlock, toBlock: i.toBlock, why };
          }
          return { type: "rangeWritten", blocks: await this.d.ledger.blocks(i.fromBlock, i.toBlock) };
        } catch (e) {
          log.warn({ component: "follow", fromBlock: i.fromBlock, toBlock: i.toBlock, err: (e as Error).message }, "could not write the range");
          return { type: "rangeFailed", fromBlock: i.fromBlock, toBlock: i.toBlock, why: (e as Error).message };
        }
      case "rewind":
        log.warn(
          { component: "follow", table: this.d.table, chain: this.d.chain, forkBlock: i.forkBlock, orphanedFrom: i.orphanedFrom, orphanedTo: i.orphanedTo },
          `a reorganisation orphaned blocks ${i.orphanedFrom}..${i.orphanedTo}: removing their rows, then writing the canonical blocks`,
        );
        try {
          await this.d.ledger.rewind(i.orphanedFrom, i.orphanedTo);
          return { type: "rewound", forkBlock: i.forkBlock };
        } catch (e) {
          return { type: "rewindFailed", why: (e as Error).message };
        }
    }
  }

  private task(fromBlock: number, toBlock: number): Task {
    return Task.fromPartial({
      taskId: `follow-${this.d.table}-${this.d.chain}-${fromBlock}-${toBlock}-${randomBytes(4).toString("hex")}`,
      functionCallConfig: FunctionCallConfig.fromPartial({ function: this.d.fn, config: { $case: "blockTable", blockTable: { chain: this.d.chain, fromBlock, toBlock } } }),
      // The scopes go to the table's ledger with the rows: the follower's position.
      outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table: this.d.table, recordScopes: true } } }],
    });
  }
}
