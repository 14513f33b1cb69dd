import type { Etcd3, IKeyValue, Watcher } from "etcd3";
import type { Logger } from "../../common/logging/logger";
import type { Counter, Gauge, Histogram } from "../../common/metrics/metrics";
import { parseRegistryPrefix, type RegistryPrefix } from "../../common/registry/registry-prefix";
import { parseWorkerHeartbeat, type WorkerHeartbeat } from "../../common/registry/worker-heartbeat";
import type { WorkerViewEvent } from "../core/coordinator-core-events";
import { RegistryMerge, type RegistryChange } from "../core/registry-merge";

export interface EtcdWatcherConfig {
  readonly endpoints: readonly string[];
  readonly keyPrefixes: readonly string[];
  readonly dialTimeoutMs: number;
  /** Pause between a failed list+watch and the next attempt. */
  readonly retryDelayMs: number;
}

export function defaultEtcdWatcherConfig(): EtcdWatcherConfig {
  return { endpoints: ["localhost:2379"], keyPrefixes: [], dialTimeoutMs: 5_000, retryDelayMs: 1_000 };
}

/** WorkerViewSink is what the watcher feeds: CoordinatorCore's doorway, for the WorkerViewEvents only. */
export interface WorkerViewSink {
  handle(event: WorkerViewEvent, nowMs: number): unknown;
}

export interface EtcdWatcherMetrics {
  /** blockx_coordinator_registry_workers{format}. */
  readonly registryWorkers: Gauge;
  /** blockx_coordinator_registry_unparsable_values_total{prefix}. */
  readonly unparsableValues: Counter;
  /** blockx_coordinator_registry_watch_connected{prefix}: 1 while the prefix's watch is up. */
  readonly watchConnected: Gauge;
  /** blockx_coordinator_registry_events_total: watch events received (before coalescing). */
  readonly watchEvents?: Counter;
  /**
   * blockx_coordinator_registry_update_age_seconds: when a watched put reaches the core, how old
   * its `lastHeartbeatMs` is (the Worker's put, etcd and the watch together; includes clock offset).
   */
  readonly updateAge?: Histogram;
}

/** Buckets of blockx_coordinator_registry_update_age_seconds: 0.5 ms .. about 40 s, 25% apart. */
export const UPDATE_AGE_BUCKETS_SECONDS: number[] = Array.from({ length: 52 }, (_, i) => Number((0.0005 * 1.25 ** i).toPrecision(3)));

type PrefixState = { listed: boolean; connected: boolean };

/**
 * EtcdWorkerWatcher runs one list+watch loop per registry prefix and feeds the merged view
 * to the core. The core is initialised (workerListLoaded) only once every prefix has
 * completed its first list. When any prefix's watch breaks, the core hears
 * watchDisconnected (the first break time counts); after every prefix has been relisted
 * and is watching again, watchReconnected. A relist replaces that prefix's entries, so
 * events missed while disconnected cannot leave a stale Worker behind. Values that do not
 * parse as a WorkerHeartbeat are skipped, counted and logged once per key and revision.
 *
 * Watch events are coalesced: each event only records the key's newest value (or its deletion);
 * the values recorded during one turn of the event loop are parsed and applied together, once per
 * key, on the next (setImmediate). Under a burst of puts a key written twice is parsed once, and
 * the core never sees a value that was already superseded. A watch that breaks drops what it
 * had not applied: the relist that follows reads the current values.
 */
export class EtcdWorkerWatcher {
  private readonly prefixes: RegistryPrefix[];
  private readonly merge: RegistryMerge;
  private readonly state = new Map<string, PrefixState>();
  private initialized = false;
  private stopped = false;
  private readonly stopWaiters = new Set<() => void>();
  private readonly watchers = new Set<Watcher>();
  /** Unparsable keys already counted and logged -> mod revision of the bad value. */
  private readonly reportedUnparsable = new Map<string, string>();
  /** Per prefix: key -> newest watched value (null: deleted), not applied yet. */
  private readonly pending = new Map<string, Map<string, IKeyValue | null>>();
  private flushScheduled = false;

  constructor(
    private readonly client: Etcd3,
    private readonly config: EtcdWatcherConfig,
    private readonly sink: WorkerViewSink,
    private readonly log: Logger,
    private readonly metrics?: EtcdWatcherMetrics,
    private readonly onWorkerRemoved: (workerAddr: string) => void = () => {},
    private readonly nowMs: () => number = Date.now,
  ) {
    this.prefixes = config.keyPrefixes.map(parseRegistryPrefix);
    this.merge = new RegistryMerge(this.prefixes);
    for (const p of this.prefixes) this.state.set(p.prefix, { listed: false, connected: false });
  }

  /** run blocks until stop(): one loop per prefix. */
  async run(): Promise<void> {
    await Promise.all(this.prefixes.map((p) => this.runPrefix(p.prefix)));
  }

  stop(): void {
    this.stopped = true;
    this.pending.clear();
    for (const w of this.watchers) void w.cancel().catch(() => {});
    for (const wake of this.stopWaiters) wake();
  }

  get isInitialized(): boolean {
    return this.initialized;
  }

  private async runPrefix(prefix: string): Promise<void> {
    const st = this.state.get(prefix)!;
    while (!this.stopped) {
      let watcher: Watcher | undefined;
      try {
        const listing = await this.client.getAll().prefix(prefix).exec();
        if (this.stopped) return;
        const heartbeats = this.parseAll(prefix, listing.kvs);
        // Apply the listing's changes at once, in the same tick as replacePrefix. Applied after the
        // watch is created (as before), they were lost when the creation failed (the merge already
        // held the new listing, so the next relist found nothing to report: a Worker deleted during
        // an outage stayed in the core), and they could land after newer events of another prefix
        // had been applied, overwriting the core with a stale winner.
        this.applyChanges(this.merge.replacePrefix(prefix, heartbeats));
        st.listed = true;
        const revision = BigInt(listing.header.revision);
        watcher = await this.client
          .watch()
          .prefix(prefix)
          .startRevision((revision + 1n).toString())
          .create();
        // stop() during the creation found no watcher to cancel and no waiter to wake: without
        // this check the loop would go on to watch forever and run() would never return.
        if (this.stopped) return;
        this.watchers.add(watcher);
        this.maybeInitialize();
        st.connected = true;
        this.metrics?.watchConnected.set({ prefix }, 1);
        this.maybeReconnected();
        this.log.info({ prefix, revision: revision.toString(), workers: heartbeats.length }, "registry listed and watching");
        const reason = await this.watchUntilBroken(prefix, watcher);
        if (this.stopped) return;
        this.log.warn({ prefix, reason }, "registry watch broken; relisting");
      } catch (e) {
        if (this.stopped) return;
        this.log.warn({ prefix, err: e }, "registry list+watch failed");
      } finally {
        if (watcher) {
          this.watchers.delete(watcher);
          void watcher.cancel().catch(() => {});
        }
      }
      // The core keeps the first disconnect time; repeating it while etcd stays down is harmless.
      this.sink.handle({ type: "watchDisconnected" }, this.nowMs());
      this.anyDisconnectMarked = true;
      st.connected = false;
      this.metrics?.watchConnected.set({ prefix }, 0);
      await this.sleep(this.config.retryDelayMs);
    }
  }

  /** Set once a disconnect has been reported, cleared by a full reconnect. */
  private anyDisconnectMarked = false;

  private watchUntilBroken(prefix: string, watcher: Watcher): Promise<string> {
    return new Promise((resolve) => {
      if (this.stopped) return resolve("stopped");
      // The listeners stay attached to the etcd3 Watcher until its cancel completes: once this
      // watch is over, its late events must not reach the merge (the relist owns the prefix now).
      let over = false;
      const done = (reason: string) => {
        over = true;
        // Not applied yet: the relist that follows reads the current values instead.
        this.pending.delete(prefix);
        this.stopWaiters.delete(wake);
        resolve(reason);
      };
      const wake = () => done("stopped");
      this.stopWaiters.add(wake);
      watcher.on("put", (kv) => {
        if (over) return;
        this.record(prefix, kv.key.toString(), kv);
      });
      watcher.on("delete", (kv) => {
        if (over) return;
        this.record(prefix, kv.key.toString(), null);
      });
      watcher.on("disconnected", (err) => done(`disconnected: ${err?.message ?? "stream closed"}`));
      watcher.on("error", (err) => done(`error: ${err?.message ?? "unknown"}`));
      watcher.on("end", () => done("stream ended"));
    });
  }

  /** record notes a watched event; the newest one per key is applied at the next flush. */
  private record(prefix: string, key: string, kv: IKeyValue | null): void {
    this.metrics?.watchEvents?.inc({ prefix });
    let keys = this.pending.get(prefix);
    if (keys === undefined) {
      keys = new Map();
      this.pending.set(prefix, keys);
    }
    keys.set(key, kv);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** flush parses and applies the newest value of every key recorded since the last flush. */
  private flush(): void {
    this.flushScheduled = false;
    if (this.stopped) {
      this.pending.clear();
      return;
    }
    const changes: (RegistryChange | null)[] = [];
    const now = this.nowMs();
    for (const [prefix, keys] of this.pending) {
      for (const [key, kv] of keys) {
        const addr = key.slice(prefix.length);
        if (kv === null) {
          this.reportedUnparsable.delete(key);
          changes.push(this.merge.delete(prefix, addr));
          continue;
        }
        const hb = this.parseOne(prefix, kv);
        if (hb) {
          this.metrics?.updateAge?.observe({}, Math.max(0, now - hb.lastHeartbeatMs) / 1000);
          changes.push(this.merge.put(prefix, hb));
        } else {
          // An unparsable value replaces whatever the key held: that Worker is no longer usable.
          changes.push(this.merge.delete(prefix, addr));
        }
      }
    }
    this.pending.clear();
    this.applyChanges(changes);
  }

  private applyChanges(changes: readonly (RegistryChange | null)[]): void {
    if (!this.initialized) return; // the first full list carries everything
    const now = this.nowMs();
    for (const c of changes) {
      if (!c) continue;
      if (c.kind === "update") this.sink.handle({ type: "workerUpdated", heartbeat: c.heartbeat }, now);
      else {
        this.sink.handle({ type: "workerRemoved", workerAddr: c.workerAddr }, now);
        this.onWorkerRemoved(c.workerAddr);
      }
    }
    this.updateGauges();
  }

  private maybeInitialize(): void {
    if (this.initialized) return;
    for (const st of this.state.values()) if (!st.listed) return;
    this.initialized = true;
    const workers = this.merge.heartbeats();
    this.sink.handle({ type: "workerListLoaded", workers }, this.nowMs());
    this.updateGauges();
    this.log.info({ workers: workers.length, prefixes: this.prefixes.map((p) => p.prefix) }, "worker view initialised");
  }

  private maybeReconnected(): void {
    if (!this.anyDisconnectMarked) return;
    for (const st of this.state.values()) if (!st.connected) return;
    this.anyDisconnectMarked = false;
    this.sink.handle({ type: "watchReconnected" }, this.nowMs());
    this.log.info("registry watch reconnected on every prefix");
  }

  private updateGauges(): void {
    if (!this.metrics) return;
    const counts = this.merge.countsByFormat();
    this.metrics.registryWorkers.set({ format: "legacy" }, counts.legacy);
    this.metrics.registryWorkers.set({ format: "v2" }, counts.v2);
  }

  private parseAll(prefix: string, kvs: readonly IKeyValue[]): WorkerHeartbeat[] {
    // A relist replaces what we know of the prefix: forget bad keys deleted while we were away.
    const present = new Set(kvs.map((kv) => kv.key.toString()));
    for (const key of this.reportedUnparsable.keys()) {
      if (key.startsWith(prefix) && !present.has(key)) this.reportedUnparsable.delete(key);
    }
    const out: WorkerHeartbeat[] = [];
    for (const kv of kvs) {
      const hb = this.parseOne(prefix, kv);
      if (hb) out.push(hb);
    }
    return out;
  }

  private parseOne(prefix: string, kv: IKeyValue): WorkerHeartbeat | null {
    const key = kv.key.toString();
    const keyAddr = key.slice(prefix.length);
    const parsed = parseWorkerHeartbeat(kv.value.toString());
    let reason: string | undefined;
    if (!parsed.ok) reason = parsed.reason;
    else if (parsed.heartbeat.workerAddr !== keyAddr) {
      reason = `key names worker ${JSON.stringify(keyAddr)} but the value names ${JSON.stringify(parsed.heartbeat.workerAddr)}`;
    }
    if (reason !== undefined || !parsed.ok) {
      // Once per key and revision, as documented: a relist after every reconnect reads the same
      // bad value again and must not count it again.
      const modRevision = String(kv.mod_revision);
      if (this.reportedUnparsable.get(key) !== modRevision) {
        this.reportedUnparsable.set(key, modRevision);
        this.metrics?.unparsableValues.inc({ prefix });
        this.log.warn({ prefix, key, modRevision, reason }, "skipping unparsable worker heartbeat");
      }
      return null;
    }
    this.reportedUnparsable.delete(key);
    return parsed.heartbeat;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.stopWaiters.delete(wake);
        resolve();
      }, ms);
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      this.stopWaiters.add(wake);
    });
  }
}
