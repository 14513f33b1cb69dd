import { describe, expect, test } from "bun:test";
import { TraceLanes } from "./trace-lanes";
import { TraceRing } from "./trace-ring";

describe("TraceRing", () => {
  test("a ring under its capacity keeps everything in order and drops nothing", () => {
    const r = new TraceRing<number>(3);
    r.push(1);
    r.push(2);
    expect(r.toArray()).toEqual([1, 2]);
    expect(r.dropped).toBe(0);
  });

  test("a full ring keeps the newest items, oldest first, and counts each one it let go", () => {
    const r = new TraceRing<number>(3);
    for (let i = 1; i <= 8; i++) r.push(i);
    expect(r.toArray()).toEqual([6, 7, 8]);
    expect(r.size).toBe(3);
    expect(r.dropped).toBe(5);
  });

  test("a capacity that is not a positive integer is refused by name", () => {
    expect(() => new TraceRing(0)).toThrow("capacity must be an integer >= 1, got 0");
    expect(() => new TraceRing(1.5)).toThrow("got 1.5");
  });
});

describe("TraceLanes", () => {
  test("a child shares its parent's lane while the parent is innermost; an overlapping sibling gets a lane of its own", () => {
    const l = new TraceLanes();
    const root = l.open(1, null);
    const a = l.open(2, { id: 1, lane: root });
    const b = l.open(3, { id: 1, lane: root }); // 2 is still open in the root's lane
    expect([root, a, b]).toEqual([1, 1, 2]);
    l.close(2, a);
    expect(l.open(4, { id: 1, lane: root })).toBe(1); // 2 ended: the root is innermost again
  });

  test("an emptied lane is reused by the next root, so lanes count the largest concurrency", () => {
    const l = new TraceLanes();
    expect(l.open(1, null)).toBe(1);
    expect(l.open(2, null)).toBe(2);
    l.close(1, 1);
    expect(l.open(3, null)).toBe(1);
    expect(l.count).toBe(2);
  });
});
