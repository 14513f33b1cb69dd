import { describe, expect, test } from "bun:test";
import { FollowerCore, type FollowerOptions } from "./follower-core";
import type { FollowedBlock, FollowerEvent, WrittenBlock } from "./follower-events";
import type { FollowerInstruction } from "./follower-instructions";

const OPTS: FollowerOptions = { startBlock: 1, confirmations: 0, maxRangeBlocks: 100, finalityDepth: 8, retryMs: 500 };

/** A chain the test controls: block n's hash is `0x<fork><n>`, so a reorganisation from block f changes every hash from f. */
class Chain {
  private readonly forks = new Map<number, string>();
  hash(n: number): string {
    let tag = "a";
    for (const [from, t] of this.forks) if (n >= from) tag = t;
    return `0x${tag}-${n}`;
  }
  reorg(from: number, tag: string): void {
    for (const k of [...this.forks.keys()]) if (k >= from) this.forks.delete(k); // every block from `from` on is new
    this.forks.set(from, tag);
  }
  headers(from: number, to: number): FollowedBlock[] {
    return Array.from({ length: to - from + 1 }, (_, i) => ({ number: from + i, hash: this.hash(from + i), parentHash: this.hash(from + i - 1) }));
  }
}

/** The blocks from..to as the ledger records them after a write of chain `c`. */
const ledger = (c: Chain, from: number, to: number): WrittenBlock[] => c.headers(from, to).map(({ number, hash }) => ({ number, hash }));

/** step feeds one event and returns the instructions (the core's invariants checked by handle itself). */
function step(f: FollowerCore, e: FollowerEvent, nowMs: number): readonly FollowerInstruction[] {
  return f.handle(e, nowMs).instructions;
}

describe("FollowerCore", () => {
  test("a fresh table catches up in ranges, then follows block by block as heads arrive", () => {
    const c = new Chain();
    const f = new FollowerCore({ ...OPTS, maxRangeBlocks: 100 });
    expect(step(f, { type: "headSeen", head: 250 }, 0)).toEqual([{ type: "readHeaders", fromBlock: 1, toBlock: 100 }]);
    expect(step(f, { type: "headersRead", headers: c.headers(1, 100) }, 1)).toEqual([{ type: "writeRange", fromBlock: 1, toBlock: 100 }]);
    // The next range is read with the last written block, to check it is still canonical.
    expect(step(f, { type: "rangeWritten", blocks: ledger(c, 1, 100) }, 2)).toEqual([{ type: "readHeaders", fromBlock: 100, toBlock: 200 }]);
    expect(step(f, { type: "headersRead", headers: c.headers(100, 200) }, 3)).toEqual([{ type: "writeRange", fromBlock: 101, toBlock: 200 }]);
    expect(step(f, { type: "rangeWritten", blocks: ledger(c, 101, 200) }, 4)).toEqual([{ type: "readHeaders", fromBlock: 200, toBlock: 250 }]);
    expect(step(f, { type: "headersRead", headers: c.headers(200, 250) }, 5)).toEqual([{ type: "writeRange", fromBlock: 201, toBlock: 250 }]);
    expect(step(f, { type: "rangeWritten", blocks: ledger(c, 201, 250) }, 6)).toEqual([]);
    expect(f.status()).toMatchObject({ state: "IDLE", position: 250, head: 250, lag: 0, blocksWritten: 250, reorgs: 0 });
    expect(step(f, { type: "headSeen", head: 251 }, 7)).toEqual([{ type: "readHeaders", fromBlock: 250, toBlock: 251 }]);
    expect(step(f, { type: "headersRead", headers: c.headers(250, 251) }, 8)).toEqual([{ type: "writeRange", fromBlock: 251, toBlock: 251 }]);
  });

  test("with confirmations, only blocks at or below head - confirmations are written", () => {
    const f = new FollowerCore({ ...OPTS, confirmations: 5 });
    expect(step(f, { type: "headSeen", head: 5 }, 0)).toEqual([]);
    expect(step(f, { type: "headSeen", head: 8 }, 1)).toEqual([{ type: "readHeaders", fromBlock: 1, toBlock: 3 }]);
  });

  for (const depth of [1, 3]) {
    test(`a reorganisation ${depth} deep: the fork point is found, the table is rewound to it first, then the canonical blocks are written`, () => {
      const c = new Chain();
      const f = new FollowerCore(OPTS);
      step(f, { type: "headSeen", head: 20 }, 0);
      step(f, { type: "headersRead", headers: c.headers(1, 20) }, 1);
      step(f, { type: "rangeWritten", blocks: ledger(c, 1, 20) }, 2);
      c.reorg(21 - depth, "b"); // blocks 21-depth..20 replaced, and 21 follows them
      expect(step(f, { type: "headSeen", head: 21 }, 3)).toEqual([{ type: "readHeaders", fromBlock: 20, toBlock: 21 }]);
      // Back over every remembered block (finality depth + a range + 1).
      expect(step(f, { type: "headersRead", headers: c.headers(20, 21) }, 4)).toEqual([{ type: "readHeaders", fromBlock: 1, toBlock: 20 }]);
      expect(step(f, { type: "headersRead", headers: c.headers(1, 20) }, 5)).toEqual([{ type: "rewind", forkBlock: 20 - depth, orphanedFrom: 21 - depth, orphanedTo: 20 }]);
      expect(f.status()).toMatchObject({ state: "REWINDING", position: 20 - depth, reorgs: 1, lastReorg: { forkBlock: 20 - depth, orphanedFrom: 21 - depth, orphanedTo: 20, atMs: 5 } });
      // Nothing is read or written before the rewind is durable.
      expect(step(f, { type: "headSeen", head: 22 }, 6)).toEqual([]);
      expect(step(f, { type: "rewound", forkBlock: 20 - depth }, 7)).toEqual([{ type: "readHeaders", fromBlock: 20 - depth, toBlock: 22 }]);
      expect(step(f, { type: "headersRead", headers: c.headers(20 - depth, 22) }, 8)).toEqual([{ type: "writeRange", fromBlock: 21 - depth, toBlock: 22 }]);
    });
  }

  test("a failed rewind is retried as a rewind (the table is never written on over orphaned blocks)", () => {
    const c = new Chain();
    const f = new FollowerCore(OPTS);
    step(f, { type: "headSeen", head: 5 }, 0);
    step(f, { type: "headersRead", headers: c.headers(1, 5) }, 1);
    step(f, { type: "rangeWritten", blocks: ledger(c, 1, 5) }, 2);
    c.reorg(5, "b");
    step(f, { type: "headSeen", head: 6 }, 3);
    step(f, { type: "headersRead", headers: c.headers(5, 6) }, 4);
    expect(step(f, { type: "headersRead", headers: c.headers(1, 5) }, 5)).toEqual([{ type: "rewind", forkBlock: 4, orphanedFrom: 5, orphanedTo: 5 }]);
    const d = f.handle({ type: "rewindFailed", why: "STORE_UNAVAILABLE" }, 10);
    expect(d).toEqual({ instructions: [], wakeAtMs: 510 });
    expect(step(f, { type: "timeAdvanced" }, 400)).toEqual([]); // not due yet
    expect(step(f, { type: "timeAdvanced" }, 510)).toEqual([{ type: "rewind", forkBlock: 4, orphanedFrom: 5, orphanedTo: 5 }]);
  });

  test("a block the Workers computed from another chain than the one read (the chain moved under the write) is found and rewritten", () => {
    const c = new Chain();
    const f = new FollowerCore(OPTS);
    step(f, { type: "headSeen", head: 10 }, 0);
    step(f, { type: "headersRead", headers: c.headers(1, 10) }, 1);
    // Block 7 reorganised while the task ran, and back again (its last block canonical): the ledger says so.
    const recorded = ledger(c, 1, 10).map((b) => (b.number === 7 ? { number: 7, hash: "0xother7" } : b));
    expect(step(f, { type: "rangeWritten", blocks: recorded }, 2)).toEqual([{ type: "readHeaders", fromBlock: 1, toBlock: 10 }]);
    expect(step(f, { type: "headersRead", headers: c.headers(1, 10) }, 3)).toEqual([{ type: "rewind", forkBlock: 6, orphanedFrom: 7, orphanedTo: 10 }]);
  });

  test("a reorganisation deeper than the finality depth stops the follower, naming the blocks, and it then does nothing", () => {
    const c = new Chain();
    const f = new FollowerCore(OPTS);
    step(f, { type: "headSeen", head: 30 }, 0);
    step(f, { type: "headersRead", headers: c.headers(1, 30) }, 1);
    step(f, { type: "rangeWritten", blocks: ledger(c, 1, 30) }, 2);
    c.reorg(15, "z"); // 16 blocks replaced, finality depth 8
    step(f, { type: "headSeen", head: 31 }, 3);
    expect(step(f, { type: "headersRead", headers: c.headers(30, 31) }, 4)).toEqual([{ type: "readHeaders", fromBlock: 1, toBlock: 30 }]);
    const out = step(f, { type: "headersRead", headers: c.headers(1, 30) }, 5);
    expect(out).toEqual([{ type: "stop", reason: expect.stringContaining("a reorganisation deeper than the finality depth (8): the written blocks 15..30 are not canonical any more") }]);
    expect(f.status()).toMatchObject({ state: "STOPPED", stoppedReason: expect.stringContaining("blocks 15..30") });
    expect(step(f, { type: "headSeen", head: 40 }, 6)).toEqual([]);
  });

  test("a reorganisation of exactly the finality depth is followed; one block deeper stops", () => {
    for (const [depth, stops] of [[8, false], [9, true]] as const) {
      const c = new Chain();
      const f = new FollowerCore(OPTS);
      step(f, { type: "headSeen", head: 30 }, 0);
      step(f, { type: "headersRead", headers: c.headers(1, 30) }, 1);
      step(f, { type: "rangeWritten", blocks: ledger(c, 1, 30) }, 2);
      c.reorg(31 - depth, "d");
      step(f, { type: "headSeen", head: 31 }, 3);
      step(f, { type: "headersRead", headers: c.headers(30, 31) }, 4);
      const out = step(f, { type: "headersRead", headers: c.headers(1, 30) }, 5);
      expect(out[0]!.type).toBe(stops ? "stop" : "rewind");
    }
  });

  test("a chain that got shorter than the table (its last blocks dropped): the blocks above its head are rewound at once", () => {
    const c = new Chain();
    const f = new FollowerCore(OPTS);
    step(f, { type: "headSeen", head: 10 }, 0);
    step(f, { type: "headersRead", headers: c.headers(1, 10) }, 1);
    step(f, { type: "rangeWritten", blocks: ledger(c, 1, 10) }, 2);
    expect(step(f, { type: "headSeen", head: 8 }, 3)).toEqual([{ type: "readHeaders", fromBlock: 1, toBlock: 8 }]);
    expect(step(f, { type: "headersRead", headers: c.headers(1, 8) }, 4)).toEqual([{ type: "rewind", forkBlock: 8, orphanedFrom: 9, orphanedTo: 10 }]);
    expect(step(f, { type: "rewound", forkBlock: 8 }, 5)).toEqual([]); // level with the head: nothing to write until it grows
    expect(f.status()).toMatchObject({ position: 8, reorgs: 1 });
  });

  test("restarted from the blocks the ledger holds, it checks the last one first and resumes after it", () => {
    const c = new Chain();
    const f = new FollowerCore(OPTS, ledger(c, 40, 50));
    expect(f.status().position).toBe(50);
    expect(step(f, { type: "headSeen", head: 52 }, 0)).toEqual([{ type: "readHeaders", fromBlock: 50, toBlock: 52 }]);
    expect(step(f, { type: "headersRead", headers: c.headers(50, 52) }, 1)).toEqual([{ type: "writeRange", fromBlock: 51, toBlock: 52 }]);
  });

  test("restarted after a reorganisation orphaned every remembered block: deeper than it can know, so it stops", () => {
    const c = new Chain();
    const f = new FollowerCore(OPTS, ledger(c, 42, 50));
    c.reorg(30, "x");
    step(f, { type: "headSeen", head: 52 }, 0);
    expect(step(f, { type: "headersRead", headers: c.headers(50, 52) }, 1)).toEqual([{ type: "readHeaders", fromBlock: 42, toBlock: 50 }]);
    expect(step(f, { type: "headersRead", headers: c.headers(42, 50) }, 2)).toEqual([{ type: "stop", reason: expect.stringContaining("nor is any block remembered before them") }]);
  });

  test("a failed write is tried again after retryMs: the range is read again (the chain may have moved)", () => {
    const c = new Chain();
    const f = new FollowerCore(OPTS);
    step(f, { type: "headSeen", head: 3 }, 0);
    step(f, { type: "headersRead", headers: c.headers(1, 3) }, 1);
    expect(f.handle({ type: "rangeFailed", fromBlock: 1, toBlock: 3, why: "STORE_UNAVAILABLE" }, 10)).toEqual({ instructions: [], wakeAtMs: 510 });
    expect(f.status().lastError).toContain("STORE_UNAVAILABLE");
    expect(step(f, { type: "headSeen", head: 4 }, 20)).toEqual([]); // waiting
    expect(step(f, { type: "timeAdvanced" }, 510)).toEqual([{ type: "readHeaders", fromBlock: 1, toBlock: 4 }]);
  });

  test("a written block the ledger lacks is not taken as written; one without a hash stops the follower (it could not see a reorganisation)", () => {
    const c = new Chain();
    const f = new FollowerCore(OPTS);
    step(f, { type: "headSeen", head: 3 }, 0);
    step(f, { type: "headersRead", headers: c.headers(1, 3) }, 1);
    expect(f.handle({ type: "rangeWritten", blocks: ledger(c, 1, 2) }, 2)).toEqual({ instructions: [], wakeAtMs: 502 });
    expect(f.status().position).toBe(0);
    step(f, { type: "timeAdvanced" }, 502);
    step(f, { type: "headersRead", headers: c.headers(1, 3) }, 503);
    const out = step(f, { type: "rangeWritten", blocks: [...ledger(c, 1, 2), { number: 3, hash: null }] }, 504);
    expect(out).toEqual([{ type: "stop", reason: expect.stringContaining("recorded no block hash for block 3") }]);
  });

  test("on a chain that cannot reorganise (the local test chain), a block written without a recorded hash takes the hash read", () => {
    const c = new Chain();
    const f = new FollowerCore({ ...OPTS, cannotReorganise: true });
    step(f, { type: "headSeen", head: 3 }, 0);
    step(f, { type: "headersRead", headers: c.headers(1, 3) }, 1);
    expect(step(f, { type: "rangeWritten", blocks: [1, 2, 3].map((number) => ({ number, hash: null })) }, 2)).toEqual([]);
    expect(f.status()).toMatchObject({ state: "IDLE", position: 3, blocksWritten: 3 });
    expect(step(f, { type: "headSeen", head: 4 }, 3)).toEqual([{ type: "readHeaders", fromBlock: 3, toBlock: 4 }]);
    expect(step(f, { type: "headersRead", headers: c.headers(3, 4) }, 4)).toEqual([{ type: "writeRange", fromBlock: 4, toBlock: 4 }]);
  });

  test("every block written since the start orphaned, within the finality depth: all of them are written again", () => {
    const c = new Chain();
    const f = new FollowerCore(OPTS);
    step(f, { type: "headSeen", head: 3 }, 0);
    step(f, { type: "headersRead", headers: c.headers(1, 3) }, 1);
    step(f, { type: "rangeWritten", blocks: ledger(c, 1, 3) }, 2);
    c.reorg(1, "q");
    step(f, { type: "headSeen", head: 4 }, 3);
    step(f, { type: "headersRead", headers: c.headers(3, 4) }, 4);
    expect(step(f, { type: "headersRead", headers: c.headers(1, 3) }, 5)).toEqual([{ type: "rewind", forkBlock: 0, orphanedFrom: 1, orphanedTo: 3 }]);
    expect(step(f, { type: "rewound", forkBlock: 0 }, 6)).toEqual([{ type: "readHeaders", fromBlock: 1, toBlock: 4 }]);
  });

  test("simulation: random heads, reorgs and failures of reads, writes and rewinds; one instruction at a time, and the table always ends canonical", () => {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let run = 0; run < 50; run++) {
      const c = new Chain();
      const opts = { ...OPTS, maxRangeBlocks: 1 + Math.floor(rand() * 10), confirmations: Math.floor(rand() * 3) };
      const f = new FollowerCore(opts);
      const table = new Map<number, string>(); // what the table holds: block -> hash
      const sim = { head: 0, now: 0, outstanding: null as FollowerInstruction | null };
      const apply = (ins: readonly FollowerInstruction[]) => {
        for (const i of ins) {
          expect(sim.outstanding).toBeNull(); // one instruction at a time
          expect(i.type).not.toBe("stop");
          sim.outstanding = i;
        }
      };
      /** carry: the adapter's part for the outstanding instruction (failing it when asked). */
      const carry = (fail: boolean) => {
        const o = sim.outstanding!;
        sim.outstanding = null;
        if (o.type === "readHeaders") apply(step(f, fail ? { type: "readFailed", why: "x" } : { type: "headersRead", headers: c.headers(o.fromBlock, o.toBlock) }, sim.now));
        else if (o.type === "writeRange") {
          if (fail) return apply(step(f, { type: "rangeFailed", fromBlock: o.fromBlock, toBlock: o.toBlock, why: "x" }, sim.now));
          for (let n = o.fromBlock; n <= o.toBlock; n++) table.set(n, c.hash(n));
          apply(step(f, { type: "rangeWritten", blocks: ledger(c, o.fromBlock, o.toBlock) }, sim.now));
        } else if (o.type === "rewind") {
          if (fail) return apply(step(f, { type: "rewindFailed", why: "x" }, sim.now));
          for (const n of [...table.keys()]) if (n > o.forkBlock) table.delete(n);
          apply(step(f, { type: "rewound", forkBlock: o.forkBlock }, sim.now));
        }
      };
      const settle = () => {
        for (let k = 0; k < 2000; k++) {
          sim.now += 1000;
          if (sim.outstanding !== null) carry(false);
          else if (f.status().state === "WAITING_RETRY") apply(step(f, { type: "timeAdvanced" }, sim.now));
          else return;
        }
      };
      for (let t = 0; t < 400; t++) {
        sim.now += 10;
        const r = rand();
        if (r < 0.2) apply(step(f, { type: "headSeen", head: ++sim.head }, sim.now));
        else if (r < 0.25 && sim.head > 2) c.reorg(sim.head - Math.floor(rand() * Math.min(3, sim.head - 1)), `r${t}`); // up to 3 deep
        else if (sim.outstanding !== null) carry(rand() < 0.1);
        else apply(step(f, { type: "timeAdvanced" }, (sim.now += 1000)));
      }
      settle();
      // A reorganisation after the last write is seen at the next head: give it one.
      apply(step(f, { type: "headSeen", head: ++sim.head }, sim.now));
      settle();
      const s = f.status();
      expect(s.state).toBe("IDLE");
      expect(s.position).toBe(sim.head - opts.confirmations);
      for (let n = 1; n <= s.position; n++) expect(table.get(n)).toBe(c.hash(n));
      expect(Math.max(0, ...table.keys())).toBe(s.position);
    }
  });
});
