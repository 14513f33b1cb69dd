import { describe, expect, test } from "bun:test";
import { HeadCache, type HeadVerdict } from "./head-cache";

/** A cache with the default trust rules: 3 sightings confirm, 10 blocks/s, 64 blocks of slack. */
function cache(ttlMs = 1000): HeadCache {
  return new HeadCache({ ttlMs });
}

/** see: one refresh of `chain` at `nowMs` that fetched `head` (lookup, then refreshed), and what was made of it. */
function see(h: HeadCache, head: number, nowMs: number, chain = "eth"): HeadVerdict {
  h.lookup(chain, nowMs);
  return h.refreshed(chain, head, nowMs);
}

describe("HeadCache", () => {
  test("the first lookup asks for a fetch; lookups while it runs do not ask again", () => {
    const h = cache();
    expect(h.lookup("eth", 0)).toEqual({ head: undefined, refresh: true });
    expect(h.lookup("eth", 5)).toEqual({ head: undefined, refresh: false });
    expect(h.refreshed("eth", 100, 10)).toEqual({ type: "accepted", head: 100 });
    expect(h.lookup("eth", 20)).toEqual({ head: 100, refresh: false });
  });

  test("after the TTL one lookup asks for a refresh and the last head is served meanwhile", () => {
    const h = cache();
    see(h, 100, 0);
    expect(h.lookup("eth", 999)).toEqual({ head: 100, refresh: false });
    expect(h.lookup("eth", 1000)).toEqual({ head: 100, refresh: true });
    expect(h.lookup("eth", 1001)).toEqual({ head: 100, refresh: false });
    h.refreshed("eth", 110, 1002);
    expect(h.lookup("eth", 1003).head).toBe(110);
  });

  test("a failed refresh keeps the head until the next TTL", () => {
    const h = cache();
    see(h, 100, 0);
    expect(h.lookup("eth", 1000).refresh).toBe(true);
    h.refreshFailed("eth", 1000);
    expect(h.lookup("eth", 1500)).toEqual({ head: 100, refresh: false });
    expect(h.lookup("eth", 2000)).toEqual({ head: 100, refresh: true });
  });

  test("one endpoint behind a load balancer answers a head far ahead once (another chain, a bad node): it is doubted, never used, and forgotten at the next good head", () => {
    const h = cache();
    see(h, 100, 0);
    expect(see(h, 1_000_000_000, 1000)).toEqual({ type: "doubted", reason: "jump", believed: 100, observed: 1_000_000_000, seen: 1 });
    expect(h.lookup("eth", 1500).head).toBe(100); // a jump never makes more blocks final
    expect(see(h, 112, 2000)).toEqual({ type: "accepted", head: 112 });
    expect(see(h, 1_000_000_000, 3000).type).toBe("doubted"); // the count starts again
    expect(h.believed("eth")).toBe(112);
  });

  test("growth the chain can have made is believed at once: 10 blocks/s since the believed head, plus 64 blocks", () => {
    const h = cache();
    see(h, 100, 0);
    expect(see(h, 100 + 64, 0).type).toBe("accepted");
    expect(see(h, 164 + 10 * 60 + 64, 60_000).type).toBe("accepted"); // a minute later, 600 + 64 more
    expect(see(h, 828 + 66, 60_100).type).toBe("doubted"); // 100 ms later: 1 + 64 at most
  });

  test("a node that really caught up far ahead is believed after 3 consistent sightings", () => {
    const h = cache();
    see(h, 100, 0);
    expect(see(h, 50_000, 1000).type).toBe("doubted");
    expect(see(h, 50_010, 2000)).toMatchObject({ type: "doubted", seen: 2 });
    expect(see(h, 50_020, 3000)).toEqual({ type: "confirmed", from: 100, to: 50_020 });
    expect(h.lookup("eth", 3001).head).toBe(50_020);
  });

  test("a head that went backwards is not believed, but the finality rule uses the lower one until it is refuted (the careful side)", () => {
    const h = cache();
    see(h, 100, 0);
    expect(see(h, 90, 1000)).toEqual({ type: "doubted", reason: "backwards", believed: 100, observed: 90, seen: 1 });
    expect(h.believed("eth")).toBe(100);
    expect(h.lookup("eth", 1001).head).toBe(90);
    expect(see(h, 101, 2000).type).toBe("accepted"); // a lagging node: the next answer refutes it
    expect(h.lookup("eth", 2001).head).toBe(101);
  });

  test("a chain that really rolled back (anvil_rollback, a reorg to a shorter chain) is believed after 3 sightings", () => {
    const h = cache();
    see(h, 100, 0);
    expect(see(h, 80, 1000).type).toBe("doubted");
    expect(see(h, 80, 2000).type).toBe("doubted");
    expect(see(h, 81, 3000)).toEqual({ type: "confirmed", from: 100, to: 81 });
    expect(see(h, 82, 4000).type).toBe("accepted");
  });

  test("sightings that disagree with the doubted head start a new doubt", () => {
    const h = cache();
    see(h, 100, 0);
    see(h, 5_000, 1000);
    expect(see(h, 90_000, 2000)).toMatchObject({ type: "doubted", seen: 1 });
    expect(see(h, 4_000, 3000)).toMatchObject({ type: "doubted", seen: 1 }); // backwards from the doubt: not consistent with it
    expect(h.believed("eth")).toBe(100);
  });

  test("chains are independent", () => {
    const h = cache();
    see(h, 5, 0, "a");
    expect(h.lookup("b", 0)).toEqual({ head: undefined, refresh: true });
  });
});
