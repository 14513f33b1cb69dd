import { describe, expect, test } from "bun:test";
import { RawJson } from "../json/raw-json";
import { ENTRY_OVERHEAD_BYTES, isFinal, ReadCache } from "./read-cache";

const raw = (n: number) => new RawJson("x".repeat(n));
const cost = (key: string, n: number) => key.length + n + ENTRY_OVERHEAD_BYTES;

describe("isFinal (the immutability rule)", () => {
  test("a block is final at or below head - depth, never above", () => {
    expect(isFinal(88, 100, 12)).toBe(true);
    expect(isFinal(89, 100, 12)).toBe(false);
    expect(isFinal(100, 100, 0)).toBe(true);
    expect(isFinal(101, 100, 0)).toBe(false); // a block past the head (a future block) is never final
    expect(isFinal(0, 5, 12)).toBe(false); // a chain younger than its finality depth has nothing final
  });
});

describe("ReadCache", () => {
  test("a stored value comes back as the same RawJson; a missing key is a miss", () => {
    const c = new ReadCache(10_000);
    const v = raw(10);
    expect(c.put("a", v)).toBe(true);
    expect(c.get("a")).toBe(v);
    expect(c.get("b")).toBeUndefined();
    expect({ hits: c.hits, misses: c.misses, size: c.size, bytes: c.bytes }).toEqual({ hits: 1, misses: 1, size: 1, bytes: cost("a", 10) });
  });

  test("the byte bound holds after every put: the least recently used entries are evicted and counted", () => {
    const per = cost("k10", 100);
    const c = new ReadCache(per * 3);
    const values = new Map<string, ReturnType<typeof raw>>();
    for (let i = 10; i < 13; i++) {
      values.set(`k${i}`, raw(100));
      c.put(`k${i}`, values.get(`k${i}`)!);
    }
    c.get("k10"); // k10 becomes the youngest; k11 is now the oldest
    c.put("k13", raw(100));
    expect(c.get("k11")).toBeUndefined();
    expect(c.get("k10")).toBe(values.get("k10")!);
    expect(c.evictions).toBe(1);
    for (let i = 14; i < 60; i++) {
      c.put(`k${i}`, raw(100));
      expect(c.bytes).toBeLessThanOrEqual(c.maxBytes);
    }
    expect(c.size).toBe(3);
    expect(c.evictions).toBe(47);
    expect(c.evictedBytes).toBe(47 * 100);
    c.put("k59", raw(40)); // a replaced value counts as evicted too
    expect(c.evictedBytes).toBe(48 * 100);
  });

  test("one big value evicts several small ones; a value bigger than the whole cache is refused and evicts nothing", () => {
    const c = new ReadCache(1_000);
    for (let i = 0; i < 5; i++) c.put(`s${i}`, raw(50));
    expect(c.put("big", raw(1_000))).toBe(false);
    expect(c.size).toBe(5);
    const mid = raw(600);
    expect(c.put("mid", mid)).toBe(true);
    expect(c.bytes).toBeLessThanOrEqual(1_000);
    expect(c.get("mid")).toBe(mid);
    expect(c.get("s0")).toBeUndefined();
  });

  test("putting a key again replaces its value and its cost", () => {
    const c = new ReadCache(10_000);
    c.put("a", raw(100));
    c.put("a", raw(10));
    expect(c.size).toBe(1);
    expect(c.bytes).toBe(cost("a", 10));
    expect(c.get("a")!.text.length).toBe(10);
  });

  test("a max of 0 disables the cache: nothing is stored", () => {
    const c = new ReadCache(0);
    expect(c.enabled).toBe(false);
    expect(c.put("a", raw(1))).toBe(false);
    expect(c.size).toBe(0);
  });

  test("a block served by span is charged its length but, unread, evicts nothing resident (no collection is asked for); once its bytes were read, they count", () => {
    const c = new ReadCache(1_000);
    let loads = 0;
    const span = (n: number) => new RawJson({ span: { file: "1:2", offset: 0, length: n }, load: () => (loads++, new Uint8Array(n)) });
    for (let i = 0; i < 10; i++) c.put(`s${i}`, span(300));
    expect(c.bytes).toBeLessThanOrEqual(c.maxBytes);
    expect(c.size).toBe(2); // 300 bytes each (plus key and overhead) against 1,000: charged as if read
    expect(c.evictions).toBe(8);
    expect(c.evictedBytes).toBe(0);
    const read = span(300);
    expect(read.bytes.byteLength).toBe(300); // an executor that could not read the store asked for the bytes
    c.put("read", read);
    c.put("next", span(300));
    c.put("after", span(300));
    expect(loads).toBe(1);
    expect(c.evictedBytes).toBe(300);
  });
});
