import { describe, expect, test } from "bun:test";
import { CandidateIndex, entryRanksBefore, type RankedEntry, WalkVerdict } from "./candidate-index";
import { mulberry32 } from "../../../test/support/mulberry32";

interface Entry extends RankedEntry {
  free: number;
  lastHeartbeatMs: number;
  penalty: number;
  workerAddr: string;
}

/**
 * The reference order, written from the seed (coordinator.zh.md, candidateRanksBefore) and not
 * from the module: FreeCapacity larger first, then LastHeartbeatMs newer, Penalty smaller, and
 * WorkerAddr in byte (dictionary) order. Each entry becomes a key compared field by field.
 */
const rankKey = (e: Entry): (number | string)[] => [-e.free, -e.lastHeartbeatMs, e.penalty, e.workerAddr];
function byRank(a: Entry, b: Entry): number {
  const ka = rankKey(a);
  const kb = rankKey(b);
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i]! < kb[i]! ? -1 : 1;
  return 0;
}

function expectConsistent(index: CandidateIndex<Entry>, model: Set<Entry>): void {
  expect(index.checkInvariants()).toEqual([]);
  expect(index.size).toBe(model.size);
  expect([...index.entries()].map((e) => e.workerAddr)).toEqual([...model].sort(byRank).map((e) => e.workerAddr));
  expect(index.first()?.workerAddr).toBe([...model].sort(byRank)[0]?.workerAddr);
}

describe("entryRanksBefore, one tie-break at a time (the seed's order)", () => {
  const base: Entry = { free: 2, lastHeartbeatMs: 100, penalty: 1, workerAddr: "b:1" };
  test.each([
    ["more free capacity wins over everything after it", { free: 3, lastHeartbeatMs: 1, penalty: 9, workerAddr: "z" }],
    ["at equal capacity, the newer heartbeat", { lastHeartbeatMs: 101, penalty: 9, workerAddr: "z" }],
    ["then the smaller penalty", { penalty: 0, workerAddr: "z" }],
    ["then the smaller address", { workerAddr: "a:1" }],
  ])("%s", (_why, better) => {
    const winner: Entry = { ...base, ...better };
    expect(entryRanksBefore(winner, base)).toBe(true);
    expect(entryRanksBefore(base, winner)).toBe(false);
    expect(byRank(winner, base)).toBe(-1);
  });
  test("an entry does not rank before itself", () => {
    expect(entryRanksBefore(base, { ...base })).toBe(false);
  });
});

describe("CandidateIndex", () => {
  test("a fleet that grows, churns and shrinks stays in rank order through chunk splits and merges", () => {
    const rnd = mulberry32(7);
    const int = (n: number) => Math.floor(rnd() * n);
    const index = new CandidateIndex<Entry>(4);
    const model = new Set<Entry>();
    let nextId = 0;
    for (let step = 0; step < 6_000; step++) {
      // Phases: grow, churn, shrink, so chunks both split and merge.
      const phase = Math.floor(step / 2_000);
      const r = rnd();
      const insert = phase === 0 ? r < 0.8 : phase === 1 ? r < 0.5 : r < 0.15;
      if (insert || model.size === 0) {
        const e: Entry = { free: 1 + int(4), lastHeartbeatMs: int(5), penalty: int(3), workerAddr: `w${nextId++}` };
        index.insert(e);
        model.add(e);
      } else {
        const victim = [...model][int(model.size)] as Entry;
        index.remove(victim);
        model.delete(victim);
        if (rnd() < 0.5) {
          // Re-key and reinsert, the way a heartbeat moves a Worker.
          victim.lastHeartbeatMs += int(3);
          victim.free = 1 + int(4);
          index.insert(victim);
          model.add(victim);
        }
      }
      if (step % 50 === 0) expectConsistent(index, model);
    }
    expectConsistent(index, model);
  });

  test("inserting twice or removing an entry under a changed key is refused", () => {
    const index = new CandidateIndex<Entry>(4);
    const e: Entry = { free: 2, lastHeartbeatMs: 1, penalty: 0, workerAddr: "w1" };
    index.insert(e);
    index.insert({ free: 1, lastHeartbeatMs: 1, penalty: 0, workerAddr: "w2" });
    expect(() => index.insert(e)).toThrow(/already indexed/);
    e.free = 0; // now it would sort after w2, where it is not
    expect(() => index.remove(e)).toThrow(/not indexed under its current key/);
    expect(() => new CandidateIndex<Entry>(2)).toThrow(/load must be an integer >= 4/);
  });

  test("rebuild orders any input and an empty index walks to nothing", () => {
    const index = new CandidateIndex<Entry>(4);
    expect(index.walk(() => WalkVerdict.ACCEPT)).toBeUndefined();
    expect(index.first()).toBeUndefined();
    const entries: Entry[] = Array.from({ length: 37 }, (_, i) => ({
      free: i % 3,
      lastHeartbeatMs: i % 5,
      penalty: i % 2,
      workerAddr: `w${i}`,
    }));
    index.rebuild(entries);
    expectConsistent(index, new Set(entries));
    index.clear();
    expectConsistent(index, new Set());
  });

  test("walk visits in rank order, and SKIP_GROUP jumps over the rest of a free-capacity group only", () => {
    const rnd = mulberry32(99);
    for (let round = 0; round < 300; round++) {
      const index = new CandidateIndex<Entry>(4);
      const n = 1 + Math.floor(rnd() * 60);
      const entries: Entry[] = Array.from({ length: n }, (_, i) => ({
        free: 1 + Math.floor(rnd() * 5),
        lastHeartbeatMs: Math.floor(rnd() * 4),
        penalty: 0,
        workerAddr: `w${i}`,
      }));
      for (const e of entries) index.insert(e);
      const sorted = entries.slice().sort(byRank);
      // A visitor that skips whole groups at entries with heartbeat 0 and accepts a random target.
      const target = rnd() < 0.2 ? undefined : sorted[Math.floor(rnd() * n)];
      const visited: string[] = [];
      const got = index.walk((e) => {
        visited.push(e.workerAddr);
        if (e === target) return WalkVerdict.ACCEPT;
        return e.lastHeartbeatMs === 0 ? WalkVerdict.SKIP_GROUP : WalkVerdict.SKIP;
      });
      // The expected visit sequence, computed directly from the sorted list.
      const expected: string[] = [];
      let want: Entry | undefined;
      let skipFree: number | undefined;
      for (const e of sorted) {
        if (skipFree !== undefined && e.free === skipFree) continue;
        skipFree = undefined;
        expected.push(e.workerAddr);
        if (e === target) {
          want = e;
          break;
        }
        if (e.lastHeartbeatMs === 0) skipFree = e.free;
      }
      expect(visited).toEqual(expected);
      expect(got).toBe(want);
    }
  });
});
