import { describe, expect, test } from "bun:test";
import { type ErrorCode, ErrorCode as Codes } from "../../common/error-code";
import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";
import type { CoordinatorCoreConfig } from "./config";
import { CoordinatorCore } from "./coordinator-core";
import type { FilterCounts } from "./coordinator-error";
import { freeCapacity, type WorkerView } from "./worker-view";
import { mulberry32 } from "../../../test/support/mulberry32";
import { naiveSurvivors } from "../../../test/support/naive-selection";

// Randomized differential test: the indexed CoordinatorCore against a straightforward reference
// that does what the seed does (filter every Worker, sort the survivors, take the first). Small
// value ranges make ties on every rank key common; a tiny index chunk load forces splits/merges.


/** Outcome of the reference; `why` names the error case so the core's message can be checked too. */
type Outcome =
  | { workerAddr: string }
  | { code: ErrorCode; why: "not ready" | "all stale" | "empty view" | "filtered"; counts: FilterCounts | undefined };

/** MESSAGE_FOR tells each error case by its message. */
const MESSAGE_FOR = {
  "not ready": /^\[UNAVAILABLE\] the (worker view is not initialized|etcd watch has been disconnected)/,
  "all stale": /^\[UNAVAILABLE\] (all \d+ workers' heartbeats are|the only worker's heartbeat is) older than/,
  "empty view": /^\[NO_EXECUTABLE_SLOT\] the worker view is empty/,
  filtered: /^\[NO_EXECUTABLE_SLOT\] no worker with free capacity passes the filters \(\d+ workers?: /,
} as const;

/** ReferenceCore is the seed's CoordinatorCore written the obvious way (O(n log n) per selection). */
class ReferenceCore {
  views = new Map<string, WorkerView>();
  initialized = false;
  disconnectedAt: number | null = null;

  constructor(private readonly c: CoordinatorCoreConfig) {}

  full(list: readonly WorkerHeartbeat[]): void {
    const next = new Map<string, WorkerView>();
    for (const hb of list) {
      const old = next.get(hb.workerAddr) ?? this.views.get(hb.workerAddr);
      next.set(hb.workerAddr, {
        ...hb,
        circuitBreakerDeadlineMs: old?.circuitBreakerDeadlineMs ?? 0,
        recentFailureCount: old?.recentFailureCount ?? 0,
        penalty: old?.penalty ?? 0,
      });
    }
    this.views = next;
    this.initialized = true;
  }

  update(hb: WorkerHeartbeat): void {
    const old = this.views.get(hb.workerAddr);
    this.views.set(hb.workerAddr, {
      ...hb,
      circuitBreakerDeadlineMs: old?.circuitBreakerDeadlineMs ?? 0,
      recentFailureCount: old?.recentFailureCount ?? 0,
      penalty: old?.penalty ?? 0,
    });
  }

  remove(addr: string): void {
    this.views.delete(addr);
  }

  ready(now: number): boolean {
    if (!this.initialized) return false;
    return !(this.disconnectedAt !== null && now - this.disconnectedAt > this.c.watchGracePeriodMs);
  }

  success(addr: string): void {
    const v = this.views.get(addr);
    if (v === undefined) return;
    v.recentFailureCount = 0;
    v.penalty = 0;
    v.circuitBreakerDeadlineMs = 0;
  }

  failure(addr: string, now: number): void {
    const v = this.views.get(addr);
    if (v === undefined) return;
    v.recentFailureCount += 1;
    v.penalty = v.recentFailureCount;
    if (v.recentFailureCount >= this.c.circuitBreakerThreshold) v.circuitBreakerDeadlineMs = now + this.c.circuitBreakerCooldownMs;
  }

  isStale(v: WorkerView, now: number): boolean {
    return now - v.lastHeartbeatMs > this.c.heartbeatTimeoutMs;
  }

  select(exclude: ReadonlySet<string>, now: number): Outcome {
    if (!this.ready(now)) return { code: Codes.ErrUnavailable, why: "not ready", counts: undefined };
    const c = this.c;
    const survivors = naiveSurvivors(this.views.values(), exclude, now, c);
    const best = survivors[0];
    if (best !== undefined) return { workerAddr: best.workerAddr };
    const all = [...this.views.values()];
    if (all.length > 0 && all.every((v) => this.isStale(v, now))) {
      return { code: Codes.ErrUnavailable, why: "all stale", counts: undefined };
    }
    // Attribution order of FilterCounts: each Worker under its first failing reason.
    const counts = {
      total: all.length,
      excluded: 0,
      overCpuRedLine: 0,
      overMemoryRedLine: 0,
      overErrorRateRedLine: 0,
      noFreeCapacity: 0,
      breakerOpen: 0,
      heartbeatStale: 0,
    };
    for (const v of all) {
      if (exclude.has(v.workerAddr)) counts.excluded++;
      else if (v.cpuPercent > c.cpuRedLine) counts.overCpuRedLine++;
      else if (v.memoryPercent > c.memoryRedLine) counts.overMemoryRedLine++;
      else if (v.errorRate > c.errorRateRedLine) counts.overErrorRateRedLine++;
      else if (freeCapacity(v) <= 0) counts.noFreeCapacity++;
      else if (now < v.circuitBreakerDeadlineMs) counts.breakerOpen++;
      else if (this.isStale(v, now)) counts.heartbeatStale++;
      else throw new Error(`reference bug: ${v.workerAddr} passes every filter`);
    }
    return { code: Codes.ErrNoExecutableSlot, why: all.length === 0 ? "empty view" : "filtered", counts };
  }
}

interface Scenario {
  seed: number;
  steps: number;
  addrCount: number;
  chunkLoad: number;
}

/** runScenario drives both cores with the same random events and compares them after every step. */
function runScenario({ seed, steps, addrCount, chunkLoad }: Scenario): { picks: number; errors: Map<string, number> } {
  const rnd = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const choose = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;

  const timeout = choose([50, 100, 200]);
  const config: CoordinatorCoreConfig = {
    heartbeatTimeoutMs: timeout,
    watchGracePeriodMs: int(1, timeout),
    slotTtlMs: 5_000,
    maxCandidates: 3,
    circuitBreakerThreshold: int(1, 4),
    circuitBreakerCooldownMs: choose([1, 30, 80, 300]),
    cpuRedLine: choose([0.5, 0.9, 1]),
    memoryRedLine: choose([0.5, 0.9, 1]),
    errorRateRedLine: choose([0.2, 0.5, 1]),
  };
  const core = new CoordinatorCore(config, { indexChunkLoad: chunkLoad });
  const ref = new ReferenceCore(config);
  // Addresses chosen so that string order differs from numeric order ("w10" < "w9").
  const addrs = Array.from({ length: addrCount }, (_, i) => (i % 7 === 3 ? `W${i}` : `w${i}`));
  const fractions = [0, 0.2, 0.5, 0.9, 0.95, 1];
  // Per scenario: how much of the address pool a full list keeps, and how often Workers leave.
  const keepInFullList = choose([0.1, 0.7, 1]);
  const weights = {
    update: 40,
    removal: choose([2, 5, 15]),
    fullList: 2,
    feedback: 15,
    disconnect: 1,
    reconnect: 2,
    select: 33,
  };
  const ops = Object.keys(weights) as Array<keyof typeof weights>;
  const totalWeight = ops.reduce((sum, k) => sum + weights[k], 0);
  const pickOp = (): keyof typeof weights => {
    let x = rnd() * totalWeight;
    for (const k of ops) {
      x -= weights[k];
      if (x < 0) return k;
    }
    return "select";
  };
  let now = 1_000_000;

  const randomHeartbeat = (addr: string): WorkerHeartbeat => ({
    workerAddr: addr,
    taskSlots: int(0, 5),
    reservedSlots: int(0, 2),
    runningTasks: int(0, 2),
    cpuPercent: rnd() < 0.8 ? 0.2 : choose(fractions),
    memoryPercent: rnd() < 0.8 ? 0.3 : choose(fractions),
    memoryAvailableBytes: int(0, 10),
    memoryTotalBytes: 10,
    processRssBytes: int(0, 10),
    errorRate: rnd() < 0.8 ? 0 : choose(fractions),
    // Coarse steps so that equal heartbeats are common; sometimes stale, sometimes from the future.
    lastHeartbeatMs: now - 10 * int(-1, Math.ceil((timeout * 1.5) / 10)),
  });

  const errors = new Map<string, number>();
  let picks = 0;
  const compareViews = (step: string) => {
    expect(core.workerCount()).toBe(ref.views.size);
    for (const v of ref.views.values()) {
      const got = core.getWorkerView(v.workerAddr);
      if (got === undefined || JSON.stringify(got) !== JSON.stringify(v)) {
        throw new Error(`${step}: view of ${v.workerAddr} differs: core ${JSON.stringify(got)} vs reference ${JSON.stringify(v)}`);
      }
    }
  };

  for (let i = 0; i < steps; i++) {
    // Time mostly moves forward; sometimes the wall clock steps back.
    now += rnd() < 0.05 ? -int(0, 150) : int(0, 25);
    const op = ref.initialized ? pickOp() : "fullList";
    let step: string;
    if (op === "update") {
      const hb = randomHeartbeat(choose(addrs));
      step = `update ${hb.workerAddr}`;
      core.handle({ type: "workerUpdated", heartbeat: hb }, now);
      ref.update(hb);
    } else if (op === "removal") {
      const addr = choose(addrs);
      step = `remove ${addr}`;
      core.handle({ type: "workerRemoved", workerAddr: addr }, now);
      ref.remove(addr);
    } else if (op === "fullList") {
      const list = addrs.filter(() => rnd() < keepInFullList).map(randomHeartbeat);
      if (list.length > 0 && rnd() < 0.2) list.push(randomHeartbeat((list[0] as WorkerHeartbeat).workerAddr));
      step = `full list of ${list.length}`;
      core.handle({ type: "workerListLoaded", workers: list }, now);
      ref.full(list);
    } else if (op === "feedback") {
      const addr = rnd() < 0.95 ? choose(addrs) : "unknown";
      const kind = choose(["success", "rejection", "timeout", "backpressure"] as const);
      step = `${kind} ${addr}`;
      if (kind === "success") {
        core.handle({ type: "slotReserved", workerAddr: addr }, now);
        ref.success(addr);
      } else if (kind === "rejection") {
        core.handle({ type: "slotRejected", workerAddr: addr }, now);
        ref.failure(addr, now);
      } else if (kind === "timeout") {
        core.handle({ type: "slotUnconfirmed", workerAddr: addr }, now);
        ref.failure(addr, now);
      } else core.handle({ type: "workerWasFull", workerAddr: addr }, now);
    } else if (op === "disconnect") {
      step = "disconnect";
      core.handle({ type: "watchDisconnected" }, now);
      if (ref.disconnectedAt === null) ref.disconnectedAt = now;
    } else if (op === "reconnect") {
      step = "reconnect";
      core.handle({ type: "watchReconnected" }, now);
      ref.disconnectedAt = null;
    } else {
      const exclude = new Set<string>();
      const k = rnd() < 0.5 ? 0 : int(1, Math.min(6, addrCount));
      for (let j = 0; j < k; j++) exclude.add(rnd() < 0.9 ? choose(addrs) : "not-a-worker");
      step = `select at ${now} excluding [${[...exclude].join(",")}]`;
      const got = core.handle({ type: "candidateRequested", taskId: `task-${i}`, excludeAddrs: exclude }, now).reply;
      const want = ref.select(exclude, now);
      if ("workerAddr" in want) {
        picks++;
        if (got.workerAddr !== want.workerAddr) {
          throw new Error(`seed ${seed} step ${i} ${step}: core picked ${got.workerAddr ?? got.err?.message}, reference ${want.workerAddr}`);
        }
      } else {
        if (got.err?.code !== want.code) {
          throw new Error(`seed ${seed} step ${i} ${step}: core ${got.workerAddr ?? got.err?.code}, reference ${want.code}`);
        }
        expect(got.err.filterCounts).toEqual(want.counts);
        expect(got.err.message).toMatch(MESSAGE_FOR[want.why]);
        errors.set(want.why, (errors.get(want.why) ?? 0) + 1);
      }
    }
    expect(core.isReady(now)).toBe(ref.ready(now));
    expect(core.isInitialized()).toBe(ref.initialized);
    try {
      core.validateState();
    } catch (e) {
      throw new Error(`seed ${seed} step ${i} ${step}: ${(e as Error).message}`);
    }
    compareViews(`seed ${seed} step ${i} ${step}`);
  }
  return { picks, errors };
}

describe("candidateRequested agrees with the sort-everything reference", () => {
  test("small views with many ties and a tiny chunk load (thousands of random views)", () => {
    let picks = 0;
    const errors = new Map<string, number>();
    for (let seed = 1; seed <= 150; seed++) {
      const out = runScenario({ seed, steps: 400, addrCount: 3 + (seed % 30), chunkLoad: 4 });
      picks += out.picks;
      for (const [k, n] of out.errors) errors.set(k, (errors.get(k) ?? 0) + n);
    }
    // The run must exercise every outcome, or it proves little.
    expect(picks).toBeGreaterThan(5_000);
    expect(errors.get("not ready") ?? 0).toBeGreaterThan(200);
    expect(errors.get("all stale") ?? 0).toBeGreaterThan(200);
    expect(errors.get("filtered") ?? 0).toBeGreaterThan(1_000);
    expect(errors.get("empty view") ?? 0).toBeGreaterThan(10);
  });

  test("a larger view with the default chunk load", () => {
    const out = runScenario({ seed: 4242, steps: 2_500, addrCount: 1_500, chunkLoad: 256 });
    expect(out.picks).toBeGreaterThan(300);
    expect(out.errors.get("filtered") ?? 0).toBeGreaterThan(100);
  });
});
