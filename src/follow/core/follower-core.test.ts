import { describe, expect, test } from "bun:test";
import { FollowerCore, type FollowerOptions } from "./follower-core";
import type { FollowedBlock } from "./follower-events";

const OPTS: FollowerOptions = { startBlock: 1, confirmations: 0, maxRangeBlocks: 100, finalityDepth: 8, retryMs: 500 };

/** A chain the test controls: block n's hash is `0x<fork><n>`, so a reorganisation from block f changes every hash from f. */
class Chain {
  private readonly forks = new Map<number, string>();
  hash(n: number): string {
    let tag = "a";
    for (const [from, t] of this.forks) if (n >= from) tag = t;
    return `0x${tag}${n}`;
  }
  reorg(from: number, tag: string): void {
    this.forks.set(from, tag);
  }
  headers(from: number, to: number): FollowedBlock[] {
    return Array.from({ length: to - from + 1 }, (_, i) => ({ number: from + i, hash: this.hash(from + i), parentHash: this.hash(from + i - 1) }));
  }
}

describe("FollowerCore", () => {
  test("a fresh table catches up in ranges, then follows block by block as heads arrive", () => {
    const c = new Chain();
    const f = new FollowerCore({ ...OPTS, maxRangeBlocks: 100 });
    expect(f.handle({ type: "headSeen", head: 250 }, 0)).toEqual([{ type: "readHeaders", fromBlock: 1, toBlock: 100 }]);
    expect(f.handle({ type: "headersRead", headers: c.headers(1, 100) }, 1)).toEqual([{ type: "writeRange", fromBlock: 1, toBlock: 100 }]);
    // The next range is read with the last written block, to check it is still canonical.
    expect(f.handle({ type: "rangeWritten", fromBlock: 1, toBlock: 100 }, 2)).toEqual([{ type: "readHeaders", fromBlock: 100, toBlock: 200 }]);
    expect(f.handle({ type: "headersRead", headers: c.headers(100, 200) }, 3)).toEqual([{ type: "writeRange", fromBlock: 101, toBlock: 200 }]);
    expect(f.handle({ type: "rangeWritten", fromBlock: 101, toBlock: 200 }, 4)).toEqual([{ type: "readHeaders", fromBlock: 200, toBlock: 250 }]);
    expect(f.handle({ type: "headersRead", headers: c.headers(200, 250) }, 5)).toEqual([{ type: "writeRange", fromBlock: 201, toBlock: 250 }]);
    expect(f.handle({ type: "rangeWritten", fromBlock: 201, toBlock: 250 }, 6)).toEqual([]);
    expect(f.status()).toMatchObject({ state: "IDLE", position: 250, head: 250, lag: 0 });
    expect(f.handle({ type: "headSeen", head: 251 }, 7)).toEqual([{ type: "readHeaders", fromBlock: 250, toBlock: 251 }]);
    expect(f.handle({ type: "headersRead", headers: c.headers(250, 251) }, 8)).toEqual([{ type: "writeRange", fromBlock: 251, toBlock: 251 }]);
  });

  test("with confirmations, only blocks at or below head - confirmations are written", () => {
    const f = new FollowerCore({ ...OPTS, confirmations: 5 });
    expect(f.handle({ type: "headSeen", head: 5 }, 0)).toEqual([]);
    expect(f.handle({ type: "headSeen", head: 8 }, 1)).toEqual([{ type: "readHeaders", fromBlock: 1, toBlock: 3 }]);
  });

  for (const depth of [1, 3]) {
    test(`a reorganisation ${depth} deep: the fork point is found, the position moves back first, then the canonical blocks are written again`, () => {
      const c = new Chain();
      const f = new FollowerCore(OPTS);
      f.handle({ type: "headSeen", head: 20 }, 0);
      f.handle({ type: "headersRead", headers: c.headers(1, 20) }, 1);
      f.handle({ type: "rangeWritten", fromBlock: 1, toBlock: 20 }, 2);
      c.reorg(21 - depth, "b"); // blocks 21-depth..20 replaced, and 21 follows them
      expect(f.handle({ type: "headSeen", head: 21 }, 3)).toEqual([{ type: "readHeaders", fromBlock: 20, toBlock: 21 }]);
      expect(f.handle({ type: "headersRead", headers: c.headers(20, 21) }, 4)).toEqual([{ type: "readHeaders", fromBlock: 12, toBlock: 20 }]);
      expect(f.handle({ type: "headersRead", headers: c.headers(12, 20) }, 5)).toEqual([
        { type: "rewind", forkBlock: 20 - depth, orphanedFrom: 21 - depth, orphanedTo: 20 },
        { type: "readHeaders", fromBlock: 20 - depth, toBlock: 21 },
      ]);
      expect(f.status()).toMatchObject({ position: 20 - depth, lastReorg: { forkBlock: 20 - depth, orphanedFrom: 21 - depth, orphanedTo: 20, atMs: 5 } });
      expect(f.handle({ type: "headersRead", headers: c.headers(20 - depth, 21) }, 6)).toEqual([{ type: "writeRange", fromBlock: 21 - depth, toBlock: 21 }]);
    });
  }

  test("a reorganisation deeper than the finality depth stops the follower, naming the blocks, and it then does nothing", () => {
    const c = new Chain();
    const f = new FollowerCore(OPTS);
    f.handle({ type: "headSeen", head: 30 }, 0);
    f.handle({ type: "headersRead", headers: c.headers(1, 30) }, 1);
    f.handle({ type: "rangeWritten", fromBlock: 1, toBlock: 30 }, 2);
    c.reorg(15, "z"); // 16 blocks replaced, finality depth 8
    f.handle({ type: "headSeen", head: 31 }, 3);
    expect(f.handle({ type: "headersRead", headers: c.headers(30, 31) }, 4)).toEqual([{ type: "readHeaders", fromBlock: 22, toBlock: 30 }]);
    const out = f.handle({ type: "headersRead", headers: c.headers(22, 30) }, 5);
    expect(out).toEqual([{ type: "stop", reason: expect.stringContaining("a reorganisation deeper than the finality depth (8): none of the written blocks 22..30 is canonical any more") }]);
    expect(f.state).toBe("STOPPED");
    expect(f.handle({ type: "headSeen", head: 40 }, 6)).toEqual([]);
  });

  test("restarted from the blocks the table holds, it checks the last one first and resumes after it", () => {
    const c = new Chain();
    const f = new FollowerCore(OPTS, c.headers(40, 50).map(({ number, hash }) => ({ number, hash })));
    expect(f.status().position).toBe(50);
    expect(f.handle({ type: "headSeen", head: 52 }, 0)).toEqual([{ type: "readHeaders", fromBlock: 50, toBlock: 52 }]);
    expect(f.handle({ type: "headersRead", headers: c.headers(50, 52) }, 1)).toEqual([{ type: "writeRange", fromBlock: 51, toBlock: 52 }]);
  });

  test("a failed write is tried again after retryMs: the range is read again (the chain may have moved)", () => {
    const c = new Chain();
    const f = new FollowerCore(OPTS);
    f.handle({ type: "headSeen", head: 3 }, 0);
    f.handle({ type: "headersRead", headers: c.headers(1, 3) }, 1);
    expect(f.handle({ type: "rangeFailed", fromBlock: 1, toBlock: 3, why: "STORE_UNAVAILABLE" }, 10)).toEqual([{ type: "armTimer", atMs: 510 }]);
    expect(f.handle({ type: "headSeen", head: 4 }, 20)).toEqual([]); // waiting
    expect(f.handle({ type: "timerFired" }, 510)).toEqual([{ type: "readHeaders", fromBlock: 1, toBlock: 4 }]);
  });

  test("every block written since the start orphaned, within the finality depth: all of them are written again", () => {
    const c = new Chain();
    const f = new FollowerCore(OPTS);
    f.handle({ type: "headSeen", head: 3 }, 0);
    f.handle({ type: "headersRead", headers: c.headers(1, 3) }, 1);
    f.handle({ type: "rangeWritten", fromBlock: 1, toBlock: 3 }, 2);
    c.reorg(1, "q");
    f.handle({ type: "headSeen", head: 4 }, 3);
    f.handle({ type: "headersRead", headers: c.headers(3, 4) }, 4);
    expect(f.handle({ type: "headersRead", headers: c.headers(1, 3) }, 5)).toEqual([
      { type: "rewind", forkBlock: 0, orphanedFrom: 1, orphanedTo: 3 },
      { type: "readHeaders", fromBlock: 1, toBlock: 4 },
    ]);
  });
});
