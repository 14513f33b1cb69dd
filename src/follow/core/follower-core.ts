import type { FollowedBlock, FollowerEvent } from "./follower-events";
import type { FollowerInstruction } from "./follower-instructions";

export interface FollowerOptions {
  /** The first block to write when the table holds none of the chain's. */
  readonly startBlock: number;
  /** Write only blocks at or below head - confirmations (0: every block as soon as it is seen, corrected on a reorg). */
  readonly confirmations: number;
  /** A catch-up range is at most this many blocks (one task each). */
  readonly maxRangeBlocks: number;
  /** A reorganisation deeper than this stops the follower (never guessed through). */
  readonly finalityDepth: number;
  /** How long after a failed read or write the follower tries again. */
  readonly retryMs: number;
}

/** FollowerState: what the follower waits for. */
export type FollowerState = "IDLE" | "READING" | "FINDING_FORK" | "WRITING" | "WAITING_RETRY" | "STOPPED";

/** The last reorganisation the follower went through (for `blockx tasks` and the dashboard). */
export interface FollowerReorg {
  readonly forkBlock: number;
  readonly orphanedFrom: number;
  readonly orphanedTo: number;
  readonly atMs: number;
}

/**
 * FollowerCore decides how a block table follows a chain (issue 50 items 1 and 2), without IO: it
 * reads the canonical headers of the next range with the block it last wrote, and writes the range
 * only if that block is still canonical (its hash the one it wrote). If it is not, a reorganisation
 * orphaned written blocks: it reads the headers back to the finality depth, finds the highest block
 * whose written hash is still canonical (the fork point), has the position moved back there first
 * (`rewind`), then writes the canonical blocks again, which replace the orphaned blocks' rows. A
 * reorganisation deeper than the finality depth (no written block in it still canonical) stops it
 * with the blocks named. One instruction is outstanding at a time; `handle` is its one doorway.
 *
 * Restart: built with the blocks the table holds last (their recorded hashes, up to the finality
 * depth), it resumes after the last and checks it first. Catch-up: ranges of maxRangeBlocks while
 * behind, block by block once level with head - confirmations.
 */
export class FollowerCore {
  private stateName: FollowerState = "IDLE";
  private head = -1;
  /** The last block written (startBlock - 1 when none). */
  private position: number;
  /** Hashes of the last written blocks, by number (at most finalityDepth + 1 of them). */
  private readonly written = new Map<number, string>();
  /** The headers read for the range being read or written. */
  private reading: { fromBlock: number; toBlock: number } | null = null;
  private pending: readonly FollowedBlock[] | null = null;
  lastReorg: FollowerReorg | null = null;

  constructor(
    readonly opts: FollowerOptions,
    writtenTail: readonly { number: number; hash: string }[] = [],
  ) {
    this.position = opts.startBlock - 1;
    for (const b of [...writtenTail].sort((a, b) => a.number - b.number)) {
      this.written.set(b.number, b.hash);
      this.position = Math.max(this.position, b.number);
    }
    this.trim();
  }

  get state(): FollowerState {
    return this.stateName;
  }

  /** The last block written; its lag behind the head seen. */
  status(): { state: FollowerState; position: number; head: number; lag: number; lastReorg: FollowerReorg | null } {
    return { state: this.stateName, position: this.position, head: this.head, lag: Math.max(0, this.head - this.position), lastReorg: this.lastReorg };
  }

  handle(e: FollowerEvent, nowMs: number): FollowerInstruction[] {
    if (this.stateName === "STOPPED") return [];
    const out = this.step(e, nowMs);
    this.validateState();
    return out;
  }

  private step(e: FollowerEvent, nowMs: number): FollowerInstruction[] {
    switch (e.type) {
      case "headSeen":
        this.head = e.head;
        return this.maybeRead();
      case "headersRead":
        if (this.stateName === "READING") return this.rangeRead(e.headers, nowMs);
        if (this.stateName === "FINDING_FORK") return this.forkRead(e.headers, nowMs);
        return [];
      case "rangeWritten": {
        if (this.stateName !== "WRITING" || this.pending === null) return [];
        for (const b of this.pending) this.written.set(b.number, b.hash);
        this.position = this.pending[this.pending.length - 1]!.number;
        this.pending = null;
        this.trim();
        this.stateName = "IDLE";
        return this.maybeRead();
      }
      case "readFailed":
      case "rangeFailed":
        if (this.stateName !== "READING" && this.stateName !== "FINDING_FORK" && this.stateName !== "WRITING") return [];
        this.pending = null;
        this.reading = null;
        this.stateName = "WAITING_RETRY";
        return [{ type: "armTimer", atMs: nowMs + this.opts.retryMs }];
      case "timerFired":
        if (this.stateName !== "WAITING_RETRY") return [];
        this.stateName = "IDLE";
        return this.maybeRead();
    }
  }

  /** maybeRead: when idle and behind head - confirmations, read the next range with the last written block before it. */
  private maybeRead(): FollowerInstruction[] {
    if (this.stateName !== "IDLE") return [];
    const target = this.head - this.opts.confirmations;
    if (target <= this.position) return [];
    const toBlock = Math.min(target, this.position + this.opts.maxRangeBlocks);
    const fromBlock = this.written.has(this.position) ? this.position : this.position + 1;
    this.reading = { fromBlock, toBlock };
    this.stateName = "READING";
    return [{ type: "readHeaders", fromBlock, toBlock }];
  }

  private rangeRead(headers: readonly FollowedBlock[], nowMs: number): FollowerInstruction[] {
    const asked = this.reading!;
    this.reading = null;
    if (headers.length === 0 || headers[0]!.number !== asked.fromBlock) {
      this.stateName = "WAITING_RETRY"; // not what was asked: read again later
      return [{ type: "armTimer", atMs: nowMs + this.opts.retryMs }];
    }
    let next = headers;
    if (headers[0]!.number === this.position) {
      // The last written block, read again with the range: still canonical, or a reorganisation orphaned it.
      if (headers[0]!.hash !== this.written.get(this.position)) return this.seekFork();
      next = headers.slice(1);
    }
    if (next.length === 0) {
      this.stateName = "IDLE";
      return this.maybeRead();
    }
    this.pending = next;
    this.stateName = "WRITING";
    return [{ type: "writeRange", fromBlock: next[0]!.number, toBlock: next[next.length - 1]!.number }];
  }

  /** seekFork: the last written block is not canonical: read back as far as the written blocks and the finality depth go. */
  private seekFork(): FollowerInstruction[] {
    const lowest = Math.min(...this.written.keys());
    this.stateName = "FINDING_FORK";
    return [{ type: "readHeaders", fromBlock: Math.max(lowest, this.position - this.opts.finalityDepth), toBlock: this.position }];
  }

  private forkRead(headers: readonly FollowedBlock[], nowMs: number): FollowerInstruction[] {
    const canonical = new Map(headers.map((h) => [h.number, h.hash]));
    const lowest = Math.min(...this.written.keys());
    let fork: number | undefined;
    for (let n = this.position; n >= lowest; n--) {
      if (this.written.get(n) !== undefined && this.written.get(n) === canonical.get(n)) {
        fork = n;
        break;
      }
    }
    // Every block written since the start is orphaned, and that is within the finality depth: the fork is below the first.
    if (fork === undefined && lowest === this.opts.startBlock && this.position - lowest < this.opts.finalityDepth) fork = this.opts.startBlock - 1;
    if (fork === undefined || this.position - fork > this.opts.finalityDepth) {
      this.stateName = "STOPPED";
      const from = Math.max(lowest, this.position - this.opts.finalityDepth);
      return [
        {
          type: "stop",
          reason:
            `a reorganisation deeper than the finality depth (${this.opts.finalityDepth}): none of the written blocks ${from}..${this.position} is canonical any more; ` +
            `the follower stops rather than guess (check the node, then verify and rewrite the table from before block ${from})`,
        },
      ];
    }
    for (const n of [...this.written.keys()]) if (n > fork) this.written.delete(n);
    const orphanedFrom = fork + 1;
    const orphanedTo = this.position;
    this.position = fork;
    this.lastReorg = { forkBlock: fork, orphanedFrom, orphanedTo, atMs: nowMs };
    this.stateName = "IDLE";
    return [{ type: "rewind", forkBlock: fork, orphanedFrom, orphanedTo }, ...this.maybeRead()];
  }

  /** trim keeps the hashes of the last finalityDepth + 1 written blocks (enough to find any fork the follower may follow). */
  private trim(): void {
    const keepFrom = this.position - this.opts.finalityDepth;
    for (const n of [...this.written.keys()]) if (n < keepFrom) this.written.delete(n);
  }

  /** validateState: the invariants after every step (a broken one is a bug here, thrown at once). */
  validateState(): void {
    if (this.position < this.opts.startBlock - 1) throw new Error(`follower: position ${this.position} below the start ${this.opts.startBlock}`);
    for (const n of this.written.keys()) if (n > this.position) throw new Error(`follower: a written hash for block ${n} above the position ${this.position}`);
    if (this.written.size > this.opts.finalityDepth + 1) throw new Error(`follower: ${this.written.size} hashes kept, more than the finality depth + 1`);
    if ((this.stateName === "WRITING") !== (this.pending !== null)) throw new Error(`follower: state ${this.stateName} with pending ${JSON.stringify(this.pending)}`);
  }
}
