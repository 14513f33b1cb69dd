import { describe, expect, test } from "bun:test";
import {
  LegacyBlockWorkerRegistryPrefix,
  LegacyBundleWorkerRegistryPrefix,
  parseRegistryPrefix,
  ProdDefaultBundleWorkerRegistryPrefix,
} from "../../common/registry/registry-prefix";
import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";
import { RegistryMerge, type RegistryChange } from "./registry-merge";
import { testHeartbeat } from "../../../test/support/heartbeat";

// Prefix strings are chosen so that their lexicographic order is obvious:
// "/blockx/bundle-workers/" < "/blockx/prod/lanes/a/..." < "/blockx/prod/lanes/b/..." < "/blockx/test/...".
const LEGACY = LegacyBundleWorkerRegistryPrefix;
const V2_A = "/blockx/prod/lanes/a/bundle-workers/";
const V2_B = "/blockx/prod/lanes/b/bundle-workers/";
const V2_TEST = "/blockx/test/lanes/default/bundle-workers/";

function merge(...prefixes: string[]): RegistryMerge {
  return new RegistryMerge(prefixes.map(parseRegistryPrefix));
}

function hb(workerAddr: string, lastHeartbeatMs: number, overrides: Partial<WorkerHeartbeat> = {}): WorkerHeartbeat {
  return testHeartbeat(workerAddr, { lastHeartbeatMs, ...overrides });
}

const update = (heartbeat: WorkerHeartbeat): RegistryChange => ({ kind: "update", heartbeat });
const removal = (workerAddr: string): RegistryChange => ({ kind: "removal", workerAddr });

/** The merged view as addr -> heartbeat, for whole-view assertions. */
function view(m: RegistryMerge): Record<string, WorkerHeartbeat> {
  return Object.fromEntries(m.heartbeats().map((h) => [h.workerAddr, h]));
}

/** Sorts changes by address so replacePrefix assertions do not depend on iteration order. */
function sorted(changes: RegistryChange[]): RegistryChange[] {
  const addr = (c: RegistryChange) => (c.kind === "update" ? c.heartbeat.workerAddr : c.workerAddr);
  return [...changes].sort((a, b) => (addr(a) < addr(b) ? -1 : addr(a) > addr(b) ? 1 : 0));
}

describe("RegistryMerge with a single prefix", () => {
  test("a put of a new Worker is an update; the Worker is in the view", () => {
    const m = merge(V2_A);
    const a = hb("10.0.0.1:9000", 100);
    expect(m.put(V2_A, a)).toEqual(update(a));
    expect(view(m)).toEqual({ "10.0.0.1:9000": a });
  });

  test("a newer heartbeat of the same Worker is an update carrying the new values", () => {
    const m = merge(V2_A);
    m.put(V2_A, hb("w1", 100));
    const newer = hb("w1", 200, { reservedSlots: 2 });
    expect(m.put(V2_A, newer)).toEqual(update(newer));
    expect(view(m)).toEqual({ w1: newer });
  });

  test("a heartbeat with an older lastHeartbeatMs under the same prefix still replaces the old one (the key holds one value)", () => {
    const m = merge(V2_A);
    m.put(V2_A, hb("w1", 200));
    const older = hb("w1", 100);
    expect(m.put(V2_A, older)).toEqual(update(older));
    expect(view(m)).toEqual({ w1: older });
  });

  test("putting an identical value again is no change", () => {
    const m = merge(V2_A);
    m.put(V2_A, hb("w1", 100));
    expect(m.put(V2_A, hb("w1", 100))).toBeNull();
  });

  test("a delete removes the Worker; a second delete and a delete of an unknown Worker are no change", () => {
    const m = merge(V2_A);
    m.put(V2_A, hb("w1", 100));
    m.put(V2_A, hb("w2", 100));
    expect(m.delete(V2_A, "w1")).toEqual(removal("w1"));
    expect(view(m)).toEqual({ w2: hb("w2", 100) });
    expect(m.delete(V2_A, "w1")).toBeNull();
    expect(m.delete(V2_A, "never-seen")).toBeNull();
  });

  test("a Worker that comes back after a delete is an update again", () => {
    const m = merge(V2_A);
    m.put(V2_A, hb("w1", 100));
    m.delete(V2_A, "w1");
    expect(m.put(V2_A, hb("w1", 300))).toEqual(update(hb("w1", 300)));
  });

  test("an unconfigured prefix is a programming error", () => {
    const m = merge(V2_A);
    expect(() => m.put(V2_B, hb("w1", 1))).toThrow(/not configured/);
    expect(() => m.delete(V2_B, "w1")).toThrow(/not configured/);
    expect(() => m.replacePrefix(V2_B, [])).toThrow(/not configured/);
  });

  test("an empty merge has an empty view and zero counts", () => {
    const m = merge(LEGACY, V2_A);
    expect(m.heartbeats()).toEqual([]);
    expect(m.countsByFormat()).toEqual({ legacy: 0, v2: 0 });
  });
});

describe("RegistryMerge: the newer lastHeartbeatMs wins across prefixes", () => {
  // The legacy/v2 and prefix-order tie-breaks are arranged to favour the LOSER here, so only the
  // timestamp can explain the winner.
  test("older under v2 first, then newer under legacy: the legacy heartbeat wins", () => {
    const m = merge(LEGACY, V2_A);
    const old = hb("w1", 100, { taskSlots: 1 });
    const newer = hb("w1", 101, { taskSlots: 2 });
    expect(m.put(V2_A, old)).toEqual(update(old));
    expect(m.put(LEGACY, newer)).toEqual(update(newer));
    expect(view(m)).toEqual({ w1: newer });
  });

  test("newer under legacy first, then older under v2: no change, legacy keeps winning", () => {
    const m = merge(LEGACY, V2_A);
    const newer = hb("w1", 101, { taskSlots: 2 });
    expect(m.put(LEGACY, newer)).toEqual(update(newer));
    expect(m.put(V2_A, hb("w1", 100, { taskSlots: 1 }))).toBeNull();
    expect(view(m)).toEqual({ w1: newer });
  });

  test("two v2 prefixes: newer under the larger prefix beats older under the smaller, in either order", () => {
    for (const order of ["small-first", "large-first"] as const) {
      const m = merge(V2_A, V2_B);
      const older = hb("w1", 100, { taskSlots: 1 });
      const newer = hb("w1", 200, { taskSlots: 2 });
      if (order === "small-first") {
        m.put(V2_A, older);
        expect(m.put(V2_B, newer)).toEqual(update(newer));
      } else {
        m.put(V2_B, newer);
        expect(m.put(V2_A, older)).toBeNull();
      }
      expect(view(m)).toEqual({ w1: newer });
    }
  });

  test("when the winner's heartbeat moves back in time, the other prefix's newer heartbeat takes over", () => {
    const m = merge(V2_A, V2_B);
    m.put(V2_A, hb("w1", 300, { taskSlots: 1 }));
    m.put(V2_B, hb("w1", 200, { taskSlots: 2 }));
    expect(view(m).w1).toEqual(hb("w1", 300, { taskSlots: 1 }));
    expect(m.put(V2_A, hb("w1", 100, { taskSlots: 1 }))).toEqual(update(hb("w1", 200, { taskSlots: 2 })));
    expect(view(m)).toEqual({ w1: hb("w1", 200, { taskSlots: 2 }) });
  });

  test("a losing prefix's newer heartbeat that is still older than the winner's is no change", () => {
    const m = merge(V2_A, V2_B);
    m.put(V2_A, hb("w1", 500));
    m.put(V2_B, hb("w1", 100, { taskSlots: 9 }));
    expect(m.put(V2_B, hb("w1", 400, { taskSlots: 9 }))).toBeNull();
    expect(view(m)).toEqual({ w1: hb("w1", 500) });
  });
});

describe("RegistryMerge: equal timestamps, v2 beats legacy regardless of order", () => {
  // Legacy "/blockx/bundle-workers/" sorts BEFORE the v2 prefix, so a prefix-order tie-break would
  // pick legacy: only the format rule can make v2 win.
  test("legacy first, then v2: the v2 heartbeat takes over", () => {
    const m = merge(LEGACY, V2_TEST);
    const legacy = hb("w1", 100, { taskSlots: 1 });
    const v2 = hb("w1", 100, { taskSlots: 2 });
    expect(m.put(LEGACY, legacy)).toEqual(update(legacy));
    expect(m.put(V2_TEST, v2)).toEqual(update(v2));
    expect(view(m)).toEqual({ w1: v2 });
  });

  test("v2 first, then legacy: no change, v2 keeps winning", () => {
    const m = merge(LEGACY, V2_TEST);
    const v2 = hb("w1", 100, { taskSlots: 2 });
    expect(m.put(V2_TEST, v2)).toEqual(update(v2));
    expect(m.put(LEGACY, hb("w1", 100, { taskSlots: 1 }))).toBeNull();
    expect(view(m)).toEqual({ w1: v2 });
  });

  test("the configured order of the prefixes does not matter", () => {
    const m = merge(V2_TEST, LEGACY);
    m.put(LEGACY, hb("w1", 100, { taskSlots: 1 }));
    m.put(V2_TEST, hb("w1", 100, { taskSlots: 2 }));
    expect(view(m)).toEqual({ w1: hb("w1", 100, { taskSlots: 2 }) });
  });

  test("the block legacy prefix is legacy too", () => {
    const m = merge(LegacyBlockWorkerRegistryPrefix, "/blockx/prod/lanes/default/block-workers/");
    m.put("/blockx/prod/lanes/default/block-workers/", hb("w1", 100, { taskSlots: 2 }));
    expect(m.put(LegacyBlockWorkerRegistryPrefix, hb("w1", 100, { taskSlots: 1 }))).toBeNull();
    expect(view(m)).toEqual({ w1: hb("w1", 100, { taskSlots: 2 }) });
  });
});

describe("RegistryMerge: same format and timestamp, the smaller prefix string wins", () => {
  test("larger prefix first, then smaller: the smaller prefix's heartbeat takes over", () => {
    const m = merge(V2_A, V2_B);
    const fromB = hb("w1", 100, { taskSlots: 2 });
    const fromA = hb("w1", 100, { taskSlots: 1 });
    expect(m.put(V2_B, fromB)).toEqual(update(fromB));
    expect(m.put(V2_A, fromA)).toEqual(update(fromA));
    expect(view(m)).toEqual({ w1: fromA });
  });

  test("smaller prefix first, then larger: no change", () => {
    const m = merge(V2_B, V2_A);
    const fromA = hb("w1", 100, { taskSlots: 1 });
    m.put(V2_A, fromA);
    expect(m.put(V2_B, hb("w1", 100, { taskSlots: 2 }))).toBeNull();
    expect(view(m)).toEqual({ w1: fromA });
  });

  test("prod sorts before test ('p' < 't')", () => {
    const m = merge(V2_TEST, ProdDefaultBundleWorkerRegistryPrefix);
    m.put(V2_TEST, hb("w1", 100, { taskSlots: 2 }));
    expect(m.put(ProdDefaultBundleWorkerRegistryPrefix, hb("w1", 100, { taskSlots: 1 }))).toEqual(
      update(hb("w1", 100, { taskSlots: 1 })),
    );
  });
});

describe("RegistryMerge: a Worker leaves only when gone under every prefix", () => {
  test("deleting the winner switches to the surviving prefix's heartbeat; deleting the last removes", () => {
    const m = merge(LEGACY, V2_A);
    const winner = hb("w1", 200, { taskSlots: 2 });
    const survivor = hb("w1", 100, { taskSlots: 1 });
    m.put(V2_A, winner);
    m.put(LEGACY, survivor);
    expect(m.delete(V2_A, "w1")).toEqual(update(survivor));
    expect(view(m)).toEqual({ w1: survivor });
    expect(m.delete(LEGACY, "w1")).toEqual(removal("w1"));
    expect(view(m)).toEqual({});
  });

  test("deleting the loser is no change", () => {
    const m = merge(LEGACY, V2_A);
    const winner = hb("w1", 200);
    m.put(V2_A, winner);
    m.put(LEGACY, hb("w1", 100));
    expect(m.delete(LEGACY, "w1")).toBeNull();
    expect(view(m)).toEqual({ w1: winner });
    expect(m.delete(V2_A, "w1")).toEqual(removal("w1"));
  });

  test("deleting the winner when the survivor holds an identical value is no change", () => {
    const m = merge(V2_A, V2_B);
    m.put(V2_A, hb("w1", 100));
    m.put(V2_B, hb("w1", 100));
    expect(m.delete(V2_A, "w1")).toBeNull();
    expect(view(m)).toEqual({ w1: hb("w1", 100) });
    expect(m.delete(V2_B, "w1")).toEqual(removal("w1"));
  });

  test("three prefixes: the Worker survives two deletes and leaves on the third", () => {
    const m = merge(LEGACY, V2_A, V2_B);
    m.put(LEGACY, hb("w1", 1));
    m.put(V2_A, hb("w1", 3));
    m.put(V2_B, hb("w1", 2));
    expect(m.delete(V2_A, "w1")).toEqual(update(hb("w1", 2)));
    expect(m.delete(V2_B, "w1")).toEqual(update(hb("w1", 1)));
    expect(m.delete(LEGACY, "w1")).toEqual(removal("w1"));
  });

  test("Workers are merged independently of each other", () => {
    const m = merge(V2_A, V2_B);
    m.put(V2_A, hb("w1", 100));
    m.put(V2_B, hb("w2", 100));
    m.put(V2_B, hb("w1", 50));
    expect(m.delete(V2_B, "w2")).toEqual(removal("w2"));
    expect(view(m)).toEqual({ w1: hb("w1", 100) });
  });
});

describe("RegistryMerge.replacePrefix", () => {
  test("the first listing of a prefix reports every Worker as an update", () => {
    const m = merge(V2_A);
    const listing = [hb("w1", 1), hb("w2", 2)];
    expect(sorted(m.replacePrefix(V2_A, listing))).toEqual([update(listing[0]!), update(listing[1]!)]);
    expect(view(m)).toEqual({ w1: listing[0]!, w2: listing[1]! });
  });

  test("a relist reports exactly the added, changed and removed Workers; unchanged ones are no change", () => {
    const m = merge(V2_A);
    m.replacePrefix(V2_A, [hb("same", 1), hb("changed", 1), hb("gone", 1)]);
    // Fresh objects with the same values, as a real relist parses them anew.
    const changes = m.replacePrefix(V2_A, [hb("same", 1), hb("changed", 2), hb("added", 1)]);
    expect(sorted(changes)).toEqual([update(hb("added", 1)), update(hb("changed", 2)), removal("gone")]);
    expect(view(m)).toEqual({ same: hb("same", 1), changed: hb("changed", 2), added: hb("added", 1) });
  });

  test("relisting an identical listing is no change at all", () => {
    const m = merge(V2_A);
    m.replacePrefix(V2_A, [hb("w1", 1), hb("w2", 1)]);
    expect(m.replacePrefix(V2_A, [hb("w1", 1), hb("w2", 1)])).toEqual([]);
  });

  test("an empty relist removes the prefix's Workers, except those still present under another prefix", () => {
    const m = merge(V2_A, V2_B);
    m.replacePrefix(V2_A, [hb("only-a", 5), hb("both", 9, { taskSlots: 1 })]);
    m.replacePrefix(V2_B, [hb("both", 3, { taskSlots: 2 })]);
    const changes = m.replacePrefix(V2_A, []);
    expect(sorted(changes)).toEqual([update(hb("both", 3, { taskSlots: 2 })), removal("only-a")]);
    expect(view(m)).toEqual({ both: hb("both", 3, { taskSlots: 2 }) });
  });

  test("a relist of a losing prefix changes nothing visible", () => {
    const m = merge(V2_A, V2_B);
    m.put(V2_A, hb("w1", 100));
    m.replacePrefix(V2_B, [hb("w1", 50)]);
    expect(m.replacePrefix(V2_B, [hb("w1", 60)])).toEqual([]);
    expect(m.replacePrefix(V2_B, [])).toEqual([]);
    expect(view(m)).toEqual({ w1: hb("w1", 100) });
  });

  test("a relist whose heartbeat beats the other prefix's is an update", () => {
    const m = merge(V2_A, V2_B);
    m.put(V2_A, hb("w1", 100));
    expect(m.replacePrefix(V2_B, [hb("w1", 150)])).toEqual([update(hb("w1", 150))]);
  });

  test("after a relist, puts and deletes keep working against the new listing", () => {
    const m = merge(V2_A);
    m.replacePrefix(V2_A, [hb("w1", 1)]);
    m.replacePrefix(V2_A, [hb("w2", 1)]);
    expect(m.delete(V2_A, "w1")).toBeNull();
    expect(m.delete(V2_A, "w2")).toEqual(removal("w2"));
  });
});

describe("RegistryMerge.countsByFormat", () => {
  test("counts distinct Workers seen under prefixes of each format, including the merged-away copies", () => {
    const m = merge(LEGACY, V2_A, V2_B);
    m.put(LEGACY, hb("w1", 1));
    m.put(LEGACY, hb("w2", 1));
    m.put(V2_A, hb("w1", 2));
    m.put(V2_B, hb("w1", 3)); // w1 under two v2 prefixes counts once for v2
    m.put(V2_B, hb("w3", 3));
    expect(m.countsByFormat()).toEqual({ legacy: 2, v2: 2 });
    expect(m.heartbeats()).toHaveLength(3);
  });

  test("follows deletes and relists", () => {
    const m = merge(LEGACY, V2_A);
    m.put(LEGACY, hb("w1", 1));
    m.put(V2_A, hb("w1", 1));
    m.put(V2_A, hb("w2", 1));
    m.delete(LEGACY, "w1");
    expect(m.countsByFormat()).toEqual({ legacy: 0, v2: 2 });
    m.replacePrefix(V2_A, [hb("w9", 1)]);
    expect(m.countsByFormat()).toEqual({ legacy: 0, v2: 1 });
  });
});
