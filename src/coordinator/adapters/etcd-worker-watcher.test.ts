import { afterEach, describe, expect, test } from "bun:test";
import type { Etcd3, Watcher } from "etcd3";
import { rmSync } from "node:fs";
import { createEtcdClient } from "../../common/etcd/etcd-client";
import { silentLogger } from "../../common/logging/logger";
import { MetricsRegistry } from "../../common/metrics/metrics";
import { LegacyBlockWorkerRegistryPrefix } from "../../common/registry/registry-prefix";
import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";
import { EtcdProcess } from "../../../test/support/etcd";
import { defaultCoordinatorCoreConfig, type CoordinatorCoreConfig } from "../core/config";
import { CoordinatorCore } from "../core/coordinator-core";
import type { WorkerViewEvent } from "../core/coordinator-core-events";
import { EtcdWorkerWatcher, type EtcdWatcherMetrics, type WorkerViewSink } from "./etcd-worker-watcher";
import { testHeartbeat } from "../../../test/support/heartbeat";
import { eventually } from "../../../test/support/eventually";

// Contract tests of EtcdWorkerWatcher against a real etcd. Tests that only read and write keys use
// the run's shared etcd with random v2 prefixes (any lane name is a valid v2 prefix); tests that
// stop etcd, or need the fixed legacy prefix, start their own. No fixed sleeps: every wait polls a
// condition, and no assertion depends on how long something took.

const TEST_TIMEOUT_MS = 30_000;
const DIAL_TIMEOUT_MS = 1_000;
const RETRY_DELAY_MS = 100;

function sharedEndpoint(): string {
  const ep = process.env.BLOCKX_TEST_ETCD_ENDPOINT;
  if (!ep) throw new Error("BLOCKX_TEST_ETCD_ENDPOINT is not set: test/support/preload.ts did not run");
  return ep;
}

/** A fresh v2 prefix no other test uses. */
function randomPrefix(kind: "block" | "bundle" = "block"): string {
  return `/blockx/test/lanes/t${crypto.randomUUID().replace(/-/g, "")}/${kind}-workers/`;
}

function hb(workerAddr: string, overrides: Partial<WorkerHeartbeat> = {}): WorkerHeartbeat {
  return testHeartbeat(workerAddr, { lastHeartbeatMs: Date.now(), ...overrides });
}

// ------------------------------------------------------------------ cleanup

const cleanups: (() => Promise<void>)[] = [];

/** Runs every registered cleanup, newest first, even when a test failed half-way. */
afterEach(async () => {
  while (cleanups.length > 0) {
    const c = cleanups.pop()!;
    await c().catch(() => {});
  }
});

async function client(endpoint: string): Promise<Etcd3> {
  const c = await createEtcdClient({ endpoints: [endpoint], dialTimeoutMs: DIAL_TIMEOUT_MS });
  cleanups.push(async () => c.close());
  return c;
}

/** A client for the shared etcd that also deletes the given prefixes when the test ends. */
async function sharedWriter(...prefixes: string[]): Promise<Etcd3> {
  const w = await client(sharedEndpoint());
  cleanups.push(async () => {
    for (const p of prefixes) await w.delete().prefix(p).exec();
  });
  return w;
}

async function ownEtcd(): Promise<EtcdProcess> {
  const e = await EtcdProcess.start();
  cleanups.push(() => e.destroy());
  return e;
}

async function put(writer: Etcd3, prefix: string, h: WorkerHeartbeat): Promise<void> {
  await writer.put(prefix + h.workerAddr).value(JSON.stringify(h)).exec();
}

// ------------------------------------------------------------------ recording sink

type SinkCall =
  | { type: "workerListLoaded"; workers: WorkerHeartbeat[]; nowMs: number }
  | { type: "workerUpdated"; heartbeat: WorkerHeartbeat; nowMs: number }
  | { type: "workerRemoved"; workerAddr: string; nowMs: number }
  | { type: "watchDisconnected"; nowMs: number }
  | { type: "watchReconnected"; nowMs: number };

type ViewCall = { full: WorkerHeartbeat[] } | { update: WorkerHeartbeat } | { removal: string };

/** RecordingSink forwards to a real CoordinatorCore and records every event (with copies of the data). */
class RecordingSink implements WorkerViewSink {
  readonly calls: SinkCall[] = [];
  constructor(readonly core: CoordinatorCore) {}
  handle(event: WorkerViewEvent, nowMs: number): void {
    switch (event.type) {
      case "workerListLoaded":
        this.calls.push({ type: event.type, workers: event.workers.map((w) => ({ ...w })), nowMs });
        break;
      case "workerUpdated":
        this.calls.push({ type: event.type, heartbeat: { ...event.heartbeat }, nowMs });
        break;
      case "workerRemoved":
        this.calls.push({ type: event.type, workerAddr: event.workerAddr, nowMs });
        break;
      default:
        this.calls.push({ type: event.type, nowMs });
    }
    this.core.handle(event, nowMs);
  }
  count(type: SinkCall["type"]): number {
    return this.calls.filter((c) => c.type === type).length;
  }
  /** The calls other than the disconnect/reconnect marks, in order, without their times. */
  viewCalls(): ViewCall[] {
    return this.calls.flatMap((c): ViewCall[] => {
      if (c.type === "workerListLoaded") return [{ full: sortByAddr(c.workers) }];
      if (c.type === "workerUpdated") return [{ update: c.heartbeat }];
      if (c.type === "workerRemoved") return [{ removal: c.workerAddr }];
      return [];
    });
  }
}

function sortByAddr(hbs: readonly WorkerHeartbeat[]): WorkerHeartbeat[] {
  return [...hbs].sort((a, b) => (a.workerAddr < b.workerAddr ? -1 : a.workerAddr > b.workerAddr ? 1 : 0));
}

// ------------------------------------------------------------------ fault injection

/**
 * Faults wraps the watcher's etcd client to hold or break the calls the watcher makes, so that
 * races (a list that has not finished, a watch that cannot be created, a stream that breaks while
 * etcd stays up) can be produced on purpose instead of by luck. Everything else is the real client.
 */
class Faults {
  /** Awaited before each list of a prefix (the list is sent after it resolves). */
  beforeList: (prefix: string) => Promise<void> = async () => {};
  /** Called synchronously when the watcher asks for a watch builder. */
  onWatch: () => void = () => {};
  /** Number of upcoming watch creations that fail. */
  failWatchCreations = 0;
  /** Every etcd3 Watcher the watcher created, in order. */
  readonly watchers: Watcher[] = [];

  wrap(real: Etcd3): Etcd3 {
    return new Proxy(real, {
      get: (target, prop) => {
        if (prop === "getAll") {
          return () => {
            const b = target.getAll();
            let listed = "";
            const prefix = b.prefix.bind(b);
            const exec = b.exec.bind(b);
            b.prefix = (p: string | Buffer) => {
              listed = p.toString();
              return prefix(p);
            };
            b.exec = (async () => {
              await this.beforeList(listed);
              return exec();
            }) as typeof b.exec;
            return b;
          };
        }
        if (prop === "watch") {
          return () => {
            this.onWatch();
            const b = target.watch();
            const create = b.create.bind(b);
            b.create = async () => {
              if (this.failWatchCreations > 0) {
                this.failWatchCreations--;
                throw new Error("injected: watch creation failed");
              }
              const w = await create();
              this.watchers.push(w);
              return w;
            };
            return b;
          };
        }
        const v = Reflect.get(target, prop, target);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  }
}

class Gate {
  open!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.open = resolve));
  waiting = 0;
}

// ------------------------------------------------------------------ the watcher under test

interface Running {
  readonly watcher: EtcdWorkerWatcher;
  readonly sink: RecordingSink;
  readonly core: CoordinatorCore;
  readonly metrics: EtcdWatcherMetrics;
  readonly removed: string[];
  /** True once run() has returned. */
  readonly settled: () => boolean;
}

async function startWatcher(opts: {
  endpoint: string;
  prefixes: string[];
  core?: Partial<CoordinatorCoreConfig>;
  faults?: Faults;
  /** Called with the watcher before run(), for hooks that need it. */
  beforeRun?: (w: EtcdWorkerWatcher) => void;
}): Promise<Running> {
  const real = await client(opts.endpoint);
  const etcd = opts.faults ? opts.faults.wrap(real) : real;
  const core = new CoordinatorCore({ ...defaultCoordinatorCoreConfig(), ...opts.core });
  const sink = new RecordingSink(core);
  const registry = new MetricsRegistry();
  const metrics: EtcdWatcherMetrics = {
    registryWorkers: registry.gauge("blockx_coordinator_registry_workers", "Workers seen in the etcd registry.", ["format"]),
    unparsableValues: registry.counter("blockx_coordinator_registry_unparsable_values_total", "Skipped values.", ["prefix"]),
    watchConnected: registry.gauge("blockx_coordinator_registry_watch_connected", "1 while up.", ["prefix"]),
    watchEvents: registry.counter("blockx_coordinator_registry_events_total", "Watch events received.", ["prefix"]),
  };
  const removed: string[] = [];
  const watcher = new EtcdWorkerWatcher(
    etcd,
    { endpoints: [opts.endpoint], keyPrefixes: opts.prefixes, dialTimeoutMs: DIAL_TIMEOUT_MS, retryDelayMs: RETRY_DELAY_MS },
    sink,
    silentLogger(),
    metrics,
    (addr) => removed.push(addr),
  );
  opts.beforeRun?.(watcher);
  let settled = false;
  const running = watcher.run().finally(() => {
    settled = true;
  });
  cleanups.push(async () => {
    watcher.stop();
    await Promise.race([running, Bun.sleep(5_000)]);
  });
  return { watcher, sink, core, metrics, removed, settled: () => settled };
}

/** Far in the future: isReady there is true only if no disconnect is pending. */
const FAR_FUTURE_MS = Number.MAX_SAFE_INTEGER;

// ------------------------------------------------------------------ tests

describe("EtcdWorkerWatcher on one prefix", () => {
  test(
    "lists the Workers already registered, then follows puts and deletes",
    async () => {
      const prefix = randomPrefix();
      const writer = await sharedWriter(prefix);
      const w1 = hb("10.0.0.1:9000");
      const w2 = hb("10.0.0.2:9000", { taskSlots: 8 });
      await put(writer, prefix, w1);
      await put(writer, prefix, w2);

      const r = await startWatcher({ endpoint: sharedEndpoint(), prefixes: [prefix] });
      await eventually(() => r.watcher.isInitialized, { what: "initial list" });
      expect(r.core.isInitialized()).toBe(true);
      expect(r.core.isReady(Date.now())).toBe(true);
      expect(r.sink.viewCalls()).toEqual([{ full: [w1, w2] }]);
      expect(r.core.workerCount()).toBe(2);
      await eventually(() => r.metrics.watchConnected.value({ prefix }) === 1, { what: "watch connected gauge" });
      expect(r.metrics.registryWorkers.value({ format: "v2" })).toBe(2);

      const w3 = hb("10.0.0.3:9000");
      await put(writer, prefix, w3);
      await eventually(() => r.core.getWorkerView(w3.workerAddr) !== undefined, { what: "w3 added" });

      const w1b = hb(w1.workerAddr, { reservedSlots: 3, lastHeartbeatMs: w1.lastHeartbeatMs + 1 });
      await put(writer, prefix, w1b);
      await eventually(() => r.core.getWorkerView(w1.workerAddr)?.reservedSlots === 3, { what: "w1 updated" });

      await writer.delete().key(prefix + w2.workerAddr).exec();
      await eventually(() => r.core.getWorkerView(w2.workerAddr) === undefined, { what: "w2 removed" });

      expect(r.sink.viewCalls()).toEqual([{ full: [w1, w2] }, { update: w3 }, { update: w1b }, { removal: w2.workerAddr }]);
      expect(r.removed).toEqual([w2.workerAddr]);
      expect(r.metrics.registryWorkers.value({ format: "v2" })).toBe(2);
      expect(r.sink.count("watchDisconnected")).toBe(0);
      expect(r.sink.count("watchReconnected")).toBe(0);
      expect(r.metrics.unparsableValues.value({ prefix })).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    "watch events that arrive together are coalesced per key: the newest value reaches the core, once",
    async () => {
      const prefix = randomPrefix();
      await sharedWriter(prefix);
      const r = await startWatcher({ endpoint: sharedEndpoint(), prefixes: [prefix] });
      await eventually(() => r.watcher.isInitialized && r.metrics.watchConnected.value({ prefix }) === 1, { what: "watching" });
      // Another process puts 30 versions of one Worker's heartbeat while this one's event loop is
      // held, so that the 30 watch events are read together when it runs again.
      const addr = "10.0.0.9:9000";
      const base = hb(addr);
      const done = `${process.env.TMPDIR ?? "/tmp"}/blockx-coalesce-${process.pid}-${Date.now()}`;
      const script = `
        const { createEtcdClient } = await import(${JSON.stringify(`${import.meta.dir}/../../common/etcd/etcd-client.ts`)});
        const c = await createEtcdClient({ endpoints: [${JSON.stringify(sharedEndpoint())}], dialTimeoutMs: 5000 });
        const base = ${JSON.stringify(base)};
        for (let i = 0; i < 30; i++) await c.put(${JSON.stringify(prefix + addr)}).value(JSON.stringify({ ...base, reservedSlots: i % 4, runningTasks: 0, lastHeartbeatMs: base.lastHeartbeatMs + i }));
        c.close();
        await Bun.write(${JSON.stringify(done)}, "done");`;
      const child = Bun.spawn([process.execPath, "-e", script], { stdout: "ignore", stderr: "inherit" });
      const deadline = Date.now() + 30_000;
      while (!(await Bun.file(done).exists()) && Date.now() < deadline) Bun.sleepSync(50); // holds the event loop
      expect(await child.exited).toBe(0);
      rmSync(done, { force: true });
      await eventually(() => r.metrics.watchEvents!.value({ prefix }) === 30, { what: "30 watch events" });
      await Bun.sleep(50); // the flush after the last read
      const updates = r.sink.calls.filter((c) => c.type === "workerUpdated");
      const last = base.lastHeartbeatMs + 29;
      expect(r.core.getWorkerView(addr)?.lastHeartbeatMs).toBe(last);
      expect(r.core.getWorkerView(addr)?.reservedSlots).toBe(29 % 4);
      // Fewer core updates than events, the last one the newest value; none goes backwards.
      expect(updates.length).toBeLessThan(30);
      const times = updates.map((c) => (c as { heartbeat: WorkerHeartbeat }).heartbeat.lastHeartbeatMs);
      expect(times.at(-1)).toBe(last);
      expect([...times].sort((a, b) => a - b)).toEqual(times);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    "an empty registry initialises an empty view (ready, nothing to pick)",
    async () => {
      const prefix = randomPrefix();
      await sharedWriter(prefix);
      const r = await startWatcher({ endpoint: sharedEndpoint(), prefixes: [prefix] });
      await eventually(() => r.watcher.isInitialized, { what: "initial list" });
      expect(r.sink.viewCalls()).toEqual([{ full: [] }]);
      expect(r.core.isReady(Date.now())).toBe(true);
      expect(r.metrics.registryWorkers.value({ format: "v2" })).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    "a revoked lease and an expired lease both remove the Worker",
    async () => {
      const prefix = randomPrefix();
      const writer = await sharedWriter(prefix);
      const r = await startWatcher({ endpoint: sharedEndpoint(), prefixes: [prefix] });
      await eventually(() => r.watcher.isInitialized, { what: "initial list" });

      const wr = hb("10.0.1.1:9000");
      const revoked = writer.lease(30, { autoKeepAlive: false });
      cleanups.push(() => revoked.revoke());
      await revoked.put(prefix + wr.workerAddr).value(JSON.stringify(wr)).exec();
      await eventually(() => r.core.getWorkerView(wr.workerAddr) !== undefined, { what: "revocable Worker added" });
      await revoked.revoke();
      await eventually(() => r.core.getWorkerView(wr.workerAddr) === undefined, { what: "revoked Worker removed" });

      // Nobody keeps this 1 s lease alive: etcd expires it (after at least its minimum TTL). The
      // put is awaited through the recorded calls, as the Worker may be gone again by the time we look.
      const we = hb("10.0.1.2:9000");
      const expiring = writer.lease(1, { autoKeepAlive: false });
      cleanups.push(() => expiring.revoke());
      await expiring.put(prefix + we.workerAddr).value(JSON.stringify(we)).exec();
      await eventually(() => r.removed.includes(we.workerAddr), { what: "expired Worker removed", timeoutMs: 20_000 });

      expect(r.sink.viewCalls()).toEqual([
        { full: [] },
        { update: wr },
        { removal: wr.workerAddr },
        { update: we },
        { removal: we.workerAddr },
      ]);
      expect(r.core.workerCount()).toBe(0);
      expect(r.removed).toEqual([wr.workerAddr, we.workerAddr]);
    },
    TEST_TIMEOUT_MS,
  );
});

describe("EtcdWorkerWatcher on several prefixes", () => {
  test(
    "does not initialise the core until every prefix has been listed; events before that are folded into the full list",
    async () => {
      const pa = randomPrefix();
      const pb = randomPrefix();
      const writer = await sharedWriter(pa, pb);
      const w1 = hb("10.0.2.1:9000");
      const w2 = hb("10.0.2.2:9000");
      await put(writer, pa, w1);
      await put(writer, pb, w2);

      const faults = new Faults();
      const gate = new Gate();
      faults.beforeList = async (p) => {
        if (p === pb) {
          gate.waiting++;
          await gate.opened;
        }
      };
      const r = await startWatcher({ endpoint: sharedEndpoint(), prefixes: [pa, pb], faults });
      await eventually(() => r.metrics.watchConnected.value({ prefix: pa }) === 1 && gate.waiting === 1, { what: "pa watching, pb's list held" });

      // A good heartbeat, then a bad value: once the bad one is counted, the watch of pa has
      // processed the good one too (events arrive in revision order).
      const w3 = hb("10.0.2.3:9000");
      await put(writer, pa, w3);
      await writer.put(`${pa}marker`).value("not json").exec();
      await eventually(() => r.metrics.unparsableValues.value({ prefix: pa }) === 1, { what: "pa's events processed" });

      expect(r.watcher.isInitialized).toBe(false);
      expect(r.core.isInitialized()).toBe(false);
      expect(r.core.isReady(Date.now())).toBe(false);
      expect(r.sink.calls).toEqual([]);

      gate.open();
      await eventually(() => r.watcher.isInitialized, { what: "initialised after pb listed" });
      expect(r.sink.viewCalls()).toEqual([{ full: [w1, w2, w3] }]);
      expect(r.sink.count("watchDisconnected")).toBe(0);
      expect(r.core.isReady(Date.now())).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    "merges one Worker registered under two prefixes: the newer heartbeat wins; it leaves only when gone from both",
    async () => {
      const pa = randomPrefix();
      const pb = randomPrefix();
      const writer = await sharedWriter(pa, pb);
      const t = Date.now();
      const addr = "10.0.3.1:9000";
      const underA = hb(addr, { taskSlots: 1, lastHeartbeatMs: t });
      const underB = hb(addr, { taskSlots: 2, lastHeartbeatMs: t + 10 });
      await put(writer, pa, underA);
      await put(writer, pb, underB);

      const r = await startWatcher({ endpoint: sharedEndpoint(), prefixes: [pa, pb] });
      await eventually(() => r.watcher.isInitialized, { what: "initial list" });
      expect(r.sink.viewCalls()).toEqual([{ full: [underB] }]);
      expect(r.metrics.registryWorkers.value({ format: "v2" })).toBe(1);

      // A newer heartbeat under pa takes over.
      const underA2 = hb(addr, { taskSlots: 3, lastHeartbeatMs: t + 20 });
      await put(writer, pa, underA2);
      await eventually(() => r.core.getWorkerView(addr)?.taskSlots === 3, { what: "pa's newer heartbeat wins" });

      // An older heartbeat under pb changes nothing; a marker proves pb's events were processed.
      await put(writer, pb, hb(addr, { taskSlots: 4, lastHeartbeatMs: t + 15 }));
      await writer.put(`${pb}marker`).value("{}").exec();
      await eventually(() => r.metrics.unparsableValues.value({ prefix: pb }) === 1, { what: "pb's events processed" });
      expect(r.core.getWorkerView(addr)?.taskSlots).toBe(3);

      // The winner disappears: the Worker stays, with the heartbeat still held under pb.
      await writer.delete().key(pa + addr).exec();
      await eventually(() => r.core.getWorkerView(addr)?.taskSlots === 4, { what: "falls back to pb's heartbeat" });

      // Gone under both: removed.
      await writer.delete().key(pb + addr).exec();
      await eventually(() => r.core.getWorkerView(addr) === undefined, { what: "removed when gone from both" });

      expect(r.sink.viewCalls()).toEqual([
        { full: [underB] },
        { update: underA2 },
        { update: hb(addr, { taskSlots: 4, lastHeartbeatMs: t + 15 }) },
        { removal: addr },
      ]);
      expect(r.removed).toEqual([addr]);
      expect(r.metrics.registryWorkers.value({ format: "v2" })).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );
});

describe("EtcdWorkerWatcher with unparsable values", () => {
  test(
    "skips and counts values that are not JSON, miss fields, or name another Worker; other Workers are unaffected",
    async () => {
      const prefix = randomPrefix();
      const writer = await sharedWriter(prefix);
      const good = hb("10.0.4.1:9000");
      await put(writer, prefix, good);
      await writer.put(`${prefix}10.0.4.2:9000`).value("not json at all").exec();
      const { errorRate: _dropped, ...missingField } = hb("10.0.4.3:9000");
      await writer.put(`${prefix}10.0.4.3:9000`).value(JSON.stringify(missingField)).exec();
      await writer.put(`${prefix}10.0.4.4:9000`).value(JSON.stringify(hb("10.0.4.5:9000"))).exec();
      await writer.put(`${prefix}10.0.4.6:9000`).value(JSON.stringify(hb("10.0.4.6:9000", { cpuPercent: 95 }))).exec();

      const r = await startWatcher({ endpoint: sharedEndpoint(), prefixes: [prefix] });
      await eventually(() => r.watcher.isInitialized, { what: "initial list" });
      expect(r.sink.viewCalls()).toEqual([{ full: [good] }]);
      expect(r.metrics.unparsableValues.value({ prefix })).toBe(4);

      // Bad values arriving through the watch are skipped the same way.
      await writer.put(`${prefix}10.0.4.7:9000`).value("[1,2,3]").exec();
      await eventually(() => r.metrics.unparsableValues.value({ prefix }) === 5, { what: "watched bad value counted" });
      const good2 = hb("10.0.4.8:9000");
      await put(writer, prefix, good2);
      await eventually(() => r.core.getWorkerView(good2.workerAddr) !== undefined, { what: "good2 added" });

      // Garbage over a good value: that Worker is no longer usable, so it leaves the view.
      await writer.put(prefix + good.workerAddr).value("{garbage").exec();
      await eventually(() => r.core.getWorkerView(good.workerAddr) === undefined, { what: "overwritten Worker removed" });
      expect(r.metrics.unparsableValues.value({ prefix })).toBe(6);

      // Deleting a bad key is nothing to the view; fixing one adds the Worker.
      await writer.delete().key(`${prefix}10.0.4.2:9000`).exec();
      const fixed = hb("10.0.4.3:9000");
      await put(writer, prefix, fixed);
      await eventually(() => r.core.getWorkerView(fixed.workerAddr) !== undefined, { what: "fixed Worker added" });

      expect(r.sink.viewCalls()).toEqual([{ full: [good] }, { update: good2 }, { removal: good.workerAddr }, { update: fixed }]);
      expect(r.core.workerCount()).toBe(2);
      expect(r.metrics.unparsableValues.value({ prefix })).toBe(6);
      expect(r.metrics.registryWorkers.value({ format: "v2" })).toBe(2);
    },
    TEST_TIMEOUT_MS,
  );
});

describe("EtcdWorkerWatcher when etcd goes away", () => {
  test(
    "an outage: disconnected at once, ready within the grace period, unavailable after it, reconnected after every prefix relists",
    async () => {
      const etcd = await ownEtcd();
      const v2 = "/blockx/prod/lanes/default/block-workers/";
      const legacy = LegacyBlockWorkerRegistryPrefix;
      const writer = await client(etcd.endpoint);
      const t = Date.now();
      // Same timestamp under both formats: v2 wins the tie.
      const w1Legacy = hb("10.0.5.1:9000", { taskSlots: 1, lastHeartbeatMs: t });
      const w1V2 = hb("10.0.5.1:9000", { taskSlots: 2, lastHeartbeatMs: t });
      const w2 = hb("10.0.5.2:9000", { lastHeartbeatMs: t });
      await put(writer, legacy, w1Legacy);
      await put(writer, v2, w1V2);
      await put(writer, legacy, w2);
      await writer.put(`${v2}junk`).value("junk").exec();

      const graceMs = 1_500;
      const r = await startWatcher({
        endpoint: etcd.endpoint,
        prefixes: [legacy, v2],
        core: { watchGracePeriodMs: graceMs, heartbeatTimeoutMs: 10_000 },
      });
      await eventually(() => r.watcher.isInitialized, { what: "initial list" });
      expect(r.sink.viewCalls()).toEqual([{ full: [w1V2, w2] }]);
      expect(r.metrics.registryWorkers.value({ format: "legacy" })).toBe(2);
      expect(r.metrics.registryWorkers.value({ format: "v2" })).toBe(1);
      expect(r.metrics.unparsableValues.value({ prefix: v2 })).toBe(1);
      await eventually(() => r.metrics.watchConnected.value({ prefix: legacy }) === 1 && r.metrics.watchConnected.value({ prefix: v2 }) === 1, { what: "both prefixes watching" });
      const callsBeforeOutage = r.sink.calls.length;

      await etcd.stop();
      await eventually(() => r.sink.count("watchDisconnected") > 0, { what: "watchDisconnected" });
      await eventually(() => r.metrics.watchConnected.value({ prefix: legacy }) === 0 && r.metrics.watchConnected.value({ prefix: v2 }) === 0, { what: "both prefixes disconnected" });
      const first = r.sink.calls.find((c) => c.type === "watchDisconnected")!;
      // The grace period runs from the first disconnect (the core keeps it): exactly graceMs.
      expect(r.core.isReady(first.nowMs + graceMs)).toBe(true);
      expect(r.core.isReady(first.nowMs + graceMs + 1)).toBe(false);
      // ...and real time gets there too while etcd stays down.
      await eventually(() => !r.core.isReady(Date.now()), { what: "unavailable after the grace period" });
      expect(r.core.isInitialized()).toBe(true);
      expect(r.core.workerCount()).toBe(2);
      expect(r.sink.count("watchReconnected")).toBe(0);

      await etcd.start();
      await eventually(() => r.sink.count("watchReconnected") === 1, { what: "watchReconnected", timeoutMs: 20_000 });
      expect(r.core.isReady(Date.now())).toBe(true);
      expect(r.core.isReady(FAR_FUTURE_MS)).toBe(true);
      expect(r.metrics.watchConnected.value({ prefix: legacy })).toBe(1);
      expect(r.metrics.watchConnected.value({ prefix: v2 })).toBe(1);
      // Nothing changed in etcd: relisting both prefixes reports no change to the view, and the
      // bad value (same key, same revision) is not counted again.
      const outage = r.sink.calls.slice(callsBeforeOutage);
      expect(outage.filter((c) => c.type !== "watchDisconnected").map((c) => c.type)).toEqual(["watchReconnected"]);
      expect(outage.at(-1)!.type).toBe("watchReconnected");
      expect(r.metrics.unparsableValues.value({ prefix: v2 })).toBe(1);

      // Changes after the reconnect reach the view.
      const after = await client(etcd.endpoint);
      const w3 = hb("10.0.5.3:9000");
      await put(after, v2, w3);
      await after.delete().key(legacy + w2.workerAddr).exec();
      await eventually(() => r.core.getWorkerView(w3.workerAddr) !== undefined, { what: "w3 added after reconnect" });
      await eventually(() => r.core.getWorkerView(w2.workerAddr) === undefined, { what: "w2 removed after reconnect" });
      expect(r.sink.viewCalls().slice(1)).toEqual([{ update: w3 }, { removal: w2.workerAddr }]);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    "etcd down when the watcher starts: not initialised (unavailable) until etcd comes up, then initialised and reconnected",
    async () => {
      const etcd = await ownEtcd();
      const prefix = randomPrefix();
      const writer = await client(etcd.endpoint);
      const w1 = hb("10.0.6.1:9000");
      await put(writer, prefix, w1);
      await etcd.stop();

      const r = await startWatcher({ endpoint: etcd.endpoint, prefixes: [prefix] });
      await eventually(() => r.sink.count("watchDisconnected") >= 2, { what: "failed lists reported" });
      expect(r.watcher.isInitialized).toBe(false);
      expect(r.core.isInitialized()).toBe(false);
      expect(r.core.isReady(Date.now())).toBe(false);
      expect(r.sink.viewCalls()).toEqual([]);

      await etcd.start();
      await eventually(() => r.watcher.isInitialized, { what: "initialised once etcd is up", timeoutMs: 20_000 });
      await eventually(() => r.sink.count("watchReconnected") === 1, { what: "watchReconnected" });
      expect(r.sink.viewCalls()).toEqual([{ full: [w1] }]);
      const methods = r.sink.calls.map((c) => c.type);
      expect(methods.indexOf("watchReconnected")).toBeGreaterThan(methods.indexOf("workerListLoaded"));
      expect(methods.at(-1)).toBe("watchReconnected");
      expect(r.core.isReady(Date.now())).toBe(true);
      expect(r.core.isReady(FAR_FUTURE_MS)).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );
});

describe("EtcdWorkerWatcher under injected faults", () => {
  test(
    "a broken watch is relisted: a Worker deleted meanwhile leaves the view even when the first new watch cannot be created",
    async () => {
      const prefix = randomPrefix();
      const writer = await sharedWriter(prefix);
      const w1 = hb("10.0.7.1:9000");
      const w2 = hb("10.0.7.2:9000");
      await put(writer, prefix, w1);
      await put(writer, prefix, w2);
      const faults = new Faults();
      const r = await startWatcher({ endpoint: sharedEndpoint(), prefixes: [prefix], faults });
      await eventually(() => r.watcher.isInitialized && faults.watchers.length === 1, { what: "initial list and watch" });

      // Hold the relist, break the stream, and wait until the old watch is fully cancelled.
      const gate = new Gate();
      faults.beforeList = async () => {
        gate.waiting++;
        await gate.opened;
      };
      faults.failWatchCreations = 1;
      const old = faults.watchers[0]!;
      const ended = new Promise<void>((resolve) => old.once("end", () => resolve()));
      old.emit("disconnected", new Error("injected: stream broke"));
      await ended;
      await eventually(() => gate.waiting === 1, { what: "relist held" });
      expect(r.sink.count("watchDisconnected")).toBe(1);

      // Missed by every watch: only the relist can see it.
      await writer.delete().key(prefix + w2.workerAddr).exec();
      faults.beforeList = async () => {};
      gate.open();

      await eventually(() => r.sink.count("watchReconnected") === 1, { what: "reconnected" });
      expect(r.core.getWorkerView(w2.workerAddr)).toBeUndefined();
      expect(r.core.getWorkerView(w1.workerAddr)).toMatchObject(w1);
      expect(r.sink.viewCalls()).toEqual([{ full: [w1, w2] }, { removal: w2.workerAddr }]);
      expect(r.removed).toEqual([w2.workerAddr]);
      expect(r.core.isReady(FAR_FUTURE_MS)).toBe(true);

      // The relisted watch works.
      const w3 = hb("10.0.7.3:9000");
      await put(writer, prefix, w3);
      await eventually(() => r.core.getWorkerView(w3.workerAddr) !== undefined, { what: "w3 added through the new watch" });
    },
    TEST_TIMEOUT_MS,
  );

  test(
    "stop() while the watch is being created ends run() without touching the sink",
    async () => {
      const prefix = randomPrefix();
      const writer = await sharedWriter(prefix);
      await put(writer, prefix, hb("10.0.8.1:9000"));
      const faults = new Faults();
      let stopped = false;
      const r = await startWatcher({
        endpoint: sharedEndpoint(),
        prefixes: [prefix],
        faults,
        beforeRun: (w) => {
          faults.onWatch = () => {
            if (!stopped) {
              stopped = true;
              w.stop();
            }
          };
        },
      });
      await eventually(() => stopped, { what: "stop() called from watch creation" });
      await eventually(r.settled, { what: "run() returned after stop()", timeoutMs: 5_000 });
      expect(r.sink.calls).toEqual([]);
      expect(r.watcher.isInitialized).toBe(false);
    },
    TEST_TIMEOUT_MS,
  );

  test(
    "stop() ends run() promptly while etcd is unreachable",
    async () => {
      const etcd = await ownEtcd();
      await etcd.stop();
      const r = await startWatcher({ endpoint: etcd.endpoint, prefixes: [randomPrefix(), randomPrefix()] });
      await eventually(() => r.sink.count("watchDisconnected") >= 2, { what: "failed lists reported" });
      r.watcher.stop();
      await eventually(r.settled, { what: "run() returned after stop()", timeoutMs: 10_000 });
      expect(r.watcher.isInitialized).toBe(false);
    },
    TEST_TIMEOUT_MS,
  );
});
