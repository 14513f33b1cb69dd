import type { Decision } from "../../common/core/decision";
import type { FollowedBlock, FollowerEvent, WrittenBlock } from "./follower-events";
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
  /** How long after a failed read, write or rewind the follower tries again. */
  readonly retryMs: number;
  /**
   * The chain cannot reorganise (the synthetic local test chain, whose blocks Workers record no
   * hash for): a block written without a recorded hash takes the hash the follower read. Any other
   * chain's unhashed block stops the follower (it could not see a reorganisation).
   */
  readonly cannotReorganise?: boolean;
}

/** FollowerState: what the follower waits for. */
export type FollowerState = "IDLE" | "READING" | "FINDING_FORK" | "WRITING" | "REWINDING" | "WAITING_RETRY" | "STOPPED";

/** The last reorganisation the follower went through (for `blockx tasks` and the dashboard). */
export interface FollowerReorg {
  readonly forkBlock: number;
  readonly orphanedFrom: number;
  readonly orphanedTo: number;
  readonly atMs: number;
}

export interface FollowerCoreStatus {
  readonly state: FollowerState;
  /** The last block written (startBlock - 1: none). */
  readonly position: number;
  readonly head: number;
  readonly lag: number;
  readonly lastReorg: FollowerReorg | null;
  readonly reorgs: number;
  readonly blocksWritten: number;
  readonly stoppedReason: string | null;
  readonly lastError: string | null;
}

type FollowerDecision = Decision<FollowerInstruction>;

/**
 * FollowerCore decides how a block table follows a chain (issue 50 items 1 and 2), without IO. It
 * reads the canonical headers of the next range together with the block it last wrote, and writes
 * the range only if that block is still canonical (the hash the table's scope ledger recorded for
 * it). After a write it takes the hashes the ledger recorded for the range (what the Workers
 * computed the rows from); one that is not the header it read means the chain moved meanwhile.
 *
 * Either way a reorganisation orphaned written blocks: it reads the headers back over the blocks it
 * remembers (at most the finality depth), takes the lowest written block whose hash is not
 * canonical, and has the table rewound to the block before it (the fork point: the orphaned blocks'
 * rows and ledger entries go, in one transaction), then writes the canonical blocks. A
 * reorganisation deeper than the finality depth (no remembered block still canonical) stops it
 * with the blocks named. One instruction is outstanding at a time; `handle` is its one doorway.
 *
 * Restart: built with the blocks the ledger holds last (their recorded hashes, finality depth +
 * maxRangeBlocks + 1 of them), it resumes after the last and checks it first. Catch-up: ranges of maxRangeBlocks while
 * behind, block by block once level with head - confirmations.
 */
export class FollowerCore {
  private stateName: FollowerState = "IDLE";
  private head = -1;
  /** The last block written (startBlock - 1 when none). */
  private position: number;
  /** Hashes of the last written blocks, by number (at most `remembered` of them). */
  private readonly written = new Map<number, string>();
  /** The headers read for the range being written, by number. */
  private pending: Map<number, string> | null = null;
  private asked: { fromBlock: number; toBlock: number } | null = null;
  private retryAtMs: number | null = null;
  /**
   * What the retry does: read on; look for the fork again (a written block was seen orphaned: the
   * follower must not read on past it); or the rewind that failed (the table must not be written on before it).
   */
  private retryKind: "read" | "fork" | "rewind" = "read";
  private lastReorg: FollowerReorg | null = null;
  private reorgs = 0;
  private blocksWritten = 0;
  private stoppedReason: string | null = null;
  private lastError: string | null = null;

  constructor(
    readonly opts: FollowerOptions,
    writtenTail: readonly WrittenBlock[] = [],
  ) {
    this.position = opts.startBlock - 1;
    for (const b of [...writtenTail].sort((a, b) => a.number - b.number)) {
      if (b.hash !== null) this.written.set(b.number, b.hash);
      this.position = Math.max(this.position, b.number);
    }
    this.trim();
  }

  get state(): FollowerState {
    return this.stateName;
  }

  status(): FollowerCoreStatus {
    return {
      state: this.stateName,
      position: this.position,
      head: this.head,
      lag: Math.max(0, this.head - this.position),
      lastReorg: this.lastReorg,
      reorgs: this.reorgs,
      blocksWritten: this.blocksWritten,
      stoppedReason: this.stoppedReason,
      lastError: this.lastError,
    };
  }

  handle(e: FollowerEvent, nowMs: number): FollowerDecision {
    const instructions = this.stateName === "STOPPED" ? [] : this.step(e, nowMs);
    this.validateState();
    return { instructions, wakeAtMs: this.stateName === "WAITING_RETRY" ? this.retryAtMs : null };
  }

  private step(e: FollowerEvent, nowMs: number): FollowerInstruction[] {
    switch (e.type) {
      case "headSeen":
        this.head = e.head;
        // A chain shorter than the table (blocks dropped, or replaced by fewer): the blocks above its head are orphaned.
        if (this.stateName === "IDLE" && e.head < this.position && this.written.size > 0) return this.seekFork(nowMs);
        return this.maybeRead();
      case "headersRead":
        if (this.stateName === "READING") return this.rangeRead(e.headers, nowMs);
        if (this.stateName === "FINDING_FORK") return this.forkRead(e.headers, nowMs);
        return [];
      case "rangeWritten":
        return this.stateName === "WRITING" ? this.rangeWritten(e.blocks, nowMs) : [];
      case "rewound":
        if (this.stateName !== "REWINDING") return [];
        this.stateName = "IDLE";
        this.lastError = null;
        return this.maybeRead();
      case "readFailed":
        if (this.stateName === "FINDING_FORK") return this.retryLater(`looking for the fork: ${e.why}`, nowMs, "fork");
        return this.stateName === "READING" ? this.retryLater(e.why, nowMs) : [];
      case "rangeFailed":
        return this.stateName === "WRITING" ? this.retryLater(`blocks ${e.fromBlock}..${e.toBlock}: ${e.why}`, nowMs) : [];
      case "rewindFailed":
        // The rewind is retried as such: the table must not be written on until it is done.
        if (this.stateName !== "REWINDING") return [];
        return this.retryLater(`rewinding to block ${this.lastReorg!.forkBlock}: ${e.why}`, nowMs, "rewind");
      case "timeAdvanced":
        if (this.stateName !== "WAITING_RETRY" || this.retryAtMs === null || nowMs < this.retryAtMs) return [];
        this.retryAtMs = null;
        if (this.retryKind === "rewind") {
          // The rewind did not happen: the table may still hold the orphaned blocks; do it again.
          const r = this.lastReorg!;
          this.stateName = "REWINDING";
          return [{ type: "rewind", forkBlock: r.forkBlock, orphanedFrom: r.orphanedFrom, orphanedTo: r.orphanedTo }];
        }
        if (this.retryKind === "fork") return this.seekFork(nowMs);
        this.stateName = "IDLE";
        return this.maybeRead();
    }
  }

  private retryLater(why: string, nowMs: number, kind: "read" | "fork" | "rewind" = "read"): FollowerInstruction[] {
    this.retryKind = kind;
    this.pending = null;
    this.asked = null;
    this.lastError = why;
    this.stateName = "WAITING_RETRY";
    this.retryAtMs = nowMs + this.opts.retryMs;
    return [];
  }

  /** maybeRead: when idle and behind head - confirmations, read the next range with the last written block before it. */
  private maybeRead(): FollowerInstruction[] {
    if (this.stateName !== "IDLE") return [];
    const target = this.head - this.opts.confirmations;
    if (target <= this.position) return [];
    const toBlock = Math.min(target, this.position + this.opts.maxRangeBlocks);
    const fromBlock = this.written.has(this.position) ? this.position : this.position + 1;
    this.asked = { fromBlock, toBlock };
    this.stateName = "READING";
    return [{ type: "readHeaders", fromBlock, toBlock }];
  }

  private rangeRead(headers: readonly FollowedBlock[], nowMs: number): FollowerInstruction[] {
    const asked = this.asked!;
    this.asked = null;
    if (headers.length === 0 || headers[0]!.number !== asked.fromBlock) return this.retryLater(`the node answered headers from ${headers[0]?.number ?? "none"}, asked ${asked.fromBlock}`, nowMs);
    let next = headers;
    if (headers[0]!.number === this.position) {
      // The last written block, read again with the range: still canonical, or a reorganisation orphaned it.
      if (headers[0]!.hash !== this.written.get(this.position)) return this.seekFork(nowMs);
      next = headers.slice(1);
    }
    if (next.length === 0) {
      this.stateName = "IDLE";
      return this.maybeRead();
    }
    this.pending = new Map(next.map((h) => [h.number, h.hash]));
    this.stateName = "WRITING";
    return [{ type: "writeRange", fromBlock: next[0]!.number, toBlock: next[next.length - 1]!.number }];
  }

  /** rangeWritten: the ledger's hashes of the range become the written blocks; one that is not what was read means the chain moved under the write. */
  private rangeWritten(blocks: readonly WrittenBlock[], nowMs: number): FollowerInstruction[] {
    const pending = this.pending!;
    const recorded = new Map(blocks.map((b) => [b.number, b.hash]));
    const numbers = [...pending.keys()];
    const missing = numbers.filter((n) => !recorded.has(n));
    if (missing.length > 0) return this.retryLater(`the task succeeded, but the table's scope ledger has no entry for block ${missing[0]} (${missing.length} missing)`, nowMs);
    if (this.opts.cannotReorganise === true) for (const n of numbers) if (recorded.get(n) === null) recorded.set(n, pending.get(n)!);
    const unhashed = numbers.find((n) => recorded.get(n) === null);
    if (unhashed !== undefined) {
      return this.stop(
        `the Workers recorded no block hash for block ${unhashed}: they cannot read the chain (its route in their CHAINS_CONFIG), so reorganisations could not be seen; the follower stops rather than write blindly`,
      );
    }
    this.pending = null;
    for (const n of numbers) this.written.set(n, recorded.get(n)!);
    this.blocksWritten += numbers.length;
    this.position = numbers[numbers.length - 1]!;
    this.lastError = null;
    this.trim();
    if (numbers.some((n) => recorded.get(n) !== pending.get(n))) return this.seekFork(nowMs);
    this.stateName = "IDLE";
    return this.maybeRead();
  }

  /** seekFork: a written block is not canonical: read back over every block whose hash is remembered. */
  private seekFork(nowMs: number): FollowerInstruction[] {
    this.stateName = "FINDING_FORK";
    const fromBlock = Math.min(...this.written.keys());
    const toBlock = Math.min(this.position, this.head);
    // Nothing remembered is on the chain any more (its head is below them all): decide without reading.
    if (toBlock < fromBlock) return this.forkRead([], nowMs);
    return [{ type: "readHeaders", fromBlock, toBlock }];
  }

  /**
   * forkRead: the orphaned blocks are the remembered ones whose hash is not canonical; the fork is
   * the block before the lowest. The reorganisation's depth, as the table saw it, is from the fork
   * to the highest orphaned block (blocks written after it, from the new chain, are canonical).
   */
  private forkRead(headers: readonly FollowedBlock[], nowMs: number): FollowerInstruction[] {
    const canonical = new Map(headers.map((h) => [h.number, h.hash]));
    const from = Math.min(...this.written.keys());
    const orphans = [...this.written].filter(([n, h]) => h !== canonical.get(n)).map(([n]) => n);
    if (orphans.length === 0) {
      // Canonical again (the node answered from another view the first time): carry on.
      this.stateName = "IDLE";
      return this.maybeRead();
    }
    const lowestOrphan = Math.min(...orphans);
    const fork = lowestOrphan - 1;
    // Every remembered block orphaned from the lowest: the fork may be below what is remembered (known only from the first block written).
    const belowKnown = lowestOrphan === from && from > this.opts.startBlock;
    if (belowKnown || Math.max(...orphans) - fork > this.opts.finalityDepth) {
      return this.stop(
        `a reorganisation deeper than the finality depth (${this.opts.finalityDepth}): the written blocks ${lowestOrphan}..${Math.max(...orphans)} are not canonical any more${belowKnown ? ", nor is any block remembered before them" : ""}; ` +
          `the follower stops rather than guess (check the node, then verify and rewrite the table from before block ${lowestOrphan})`,
      );
    }
    for (const n of [...this.written.keys()]) if (n > fork) this.written.delete(n);
    const orphanedTo = this.position;
    this.position = fork;
    this.lastReorg = { forkBlock: fork, orphanedFrom: lowestOrphan, orphanedTo, atMs: nowMs };
    this.reorgs++;
    this.stateName = "REWINDING";
    return [{ type: "rewind", forkBlock: fork, orphanedFrom: lowestOrphan, orphanedTo }];
  }

  private stop(reason: string): FollowerInstruction[] {
    this.stateName = "STOPPED";
    this.stoppedReason = reason;
    this.pending = null;
    this.asked = null;
    return [{ type: "stop", reason }];
  }

  /**
   * How many written blocks' hashes are remembered: the finality depth, a range written since the
   * chain moved under it, and the fork block itself.
   */
  private get remembered(): number {
    return this.opts.finalityDepth + this.opts.maxRangeBlocks + 1;
  }

  /** trim keeps the hashes of the last `remembered` written blocks (enough to find any fork the follower may follow). */
  private trim(): void {
    const keepFrom = this.position - this.remembered + 1;
    for (const n of [...this.written.keys()]) if (n < keepFrom) this.written.delete(n);
  }

  /** validateState: the invariants after every step (a broken one is a bug here, thrown at once). */
  validateState(): void {
    if (this.position < this.opts.startBlock - 1) throw new Error(`follower: position ${this.position} below the start ${this.opts.startBlock}`);
    for (const n of this.written.keys()) if (n > this.position) throw new Error(`follower: a written hash for block ${n} above the position ${this.position}`);
    if (this.written.size > this.remembered) throw new Error(`follower: ${this.written.size} hashes kept, more than ${this.remembered}`);
    if ((this.stateName === "WRITING") !== (this.pending !== null)) throw new Error(`follower: state ${this.stateName} with a range pending: ${this.pending !== null}`);
    if ((this.stateName === "READING") !== (this.asked !== null)) throw new Error(`follower: state ${this.stateName} with a read asked: ${this.asked !== null}`);
    if ((this.stateName === "WAITING_RETRY") !== (this.retryAtMs !== null)) throw new Error(`follower: state ${this.stateName} with a retry at ${this.retryAtMs}`);
  }
}
