import { describe, expect, test } from "bun:test";
import { HeadCache } from "./head-cache";

describe("HeadCache", () => {
  test("the first lookup asks for a fetch; lookups while it runs do not ask again", () => {
    const h = new HeadCache(1000);
    expect(h.lookup("eth", 0)).toEqual({ head: undefined, refresh: true });
    expect(h.lookup("eth", 5)).toEqual({ head: undefined, refresh: false });
    h.refreshed("eth", 100, 10);
    expect(h.lookup("eth", 20)).toEqual({ head: 100, refresh: false });
  });

  test("after the TTL one lookup asks for a refresh and the stale head is served meanwhile", () => {
    const h = new HeadCache(1000);
    h.lookup("eth", 0);
    h.refreshed("eth", 100, 0);
    expect(h.lookup("eth", 999)).toEqual({ head: 100, refresh: false });
    expect(h.lookup("eth", 1000)).toEqual({ head: 100, refresh: true });
    expect(h.lookup("eth", 1001)).toEqual({ head: 100, refresh: false });
    h.refreshed("eth", 110, 1002);
    expect(h.lookup("eth", 1003).head).toBe(110);
  });

  test("a head never moves backwards (a lagging node's answer), and a failed refresh keeps the old head until the next TTL", () => {
    const h = new HeadCache(1000);
    h.lookup("eth", 0);
    h.refreshed("eth", 100, 0);
    h.lookup("eth", 1000);
    h.refreshed("eth", 90, 1000);
    expect(h.lookup("eth", 1001).head).toBe(100);
    expect(h.lookup("eth", 2000).refresh).toBe(true);
    h.refreshFailed("eth", 2000);
    expect(h.lookup("eth", 2500)).toEqual({ head: 100, refresh: false });
    expect(h.lookup("eth", 3000)).toEqual({ head: 100, refresh: true });
  });

  test("chains are independent", () => {
    const h = new HeadCache(1000);
    h.lookup("a", 0);
    h.refreshed("a", 5, 0);
    expect(h.lookup("b", 0)).toEqual({ head: undefined, refresh: true });
  });
});
