/**
 * Reduced heartbeat publishing changes no Coordinator decision: a seeded cluster whose every Worker
 * carries two HeartbeatScheduleCores, one per publishing mode, feeds two CoordinatorCores from the
 * same truth. Core A hears every sample (EVERY_INTERVAL, the traffic before issue 22); core B hears
 * only what ON_CHANGE puts (capacity or red-line changes, a refresh every REFRESH_MS). Reservations
 * arrive at seeded times; each decision of A is compared with B's, then A's pick is carried out
 * against the truth and both cores hear the same feedback, so their local fields stay equal.
 *
 * What must hold at every request:
 * - both views hold the same capacity and red-line sides for every Worker;
 * - the same decision: both offer a Worker (a grant) or both refuse with the same error code; two
 *   picks that differ rank equal in both views on everything but lastHeartbeatMs (the seed's second
 *   key, which reduced publishing changes by design: among Workers of equal free capacity the one
 *   that changed last comes first, instead of the one whose tick came last);
 * - the one allowed difference: a Worker that stopped publishing (cut off from etcd, still serving)
 *   is filtered by B earlier than by A, by less than one refresh period (B's last put of it is at
 *   most REFRESH_MS older than A's).
 */
import { describe, expect, test } from "bun:test";
import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";
import { DEFAULT_RED_LINES, HeartbeatScheduleCore, type HeartbeatPublishMode } from "../../worker/core/heartbeat-schedule";
import { mulberry32 } from "../../../test/support/mulberry32";
import { defaultCoordinatorCoreConfig } from "./config";
import { CoordinatorCore } from "./coordinator-core";
import type { CandidateResult } from "./coordinator-core-instructions";
import { freeCapacity } from "./worker-view";

const INTERVAL_MS = 200;
const REFRESH_MS = 5_000;
const LEASE_TTL_MS = 10_000;
const TASK_SLOTS = 4;

interface TruthWorker {
  readonly addr: string;
  reserved: number;
  running: number;
  cpu: number;
  cpuSpikeUntilMs: number;
  /** Outcomes of the last 10 task ends (true: a system failure). */
  recentFailures: boolean[];
  /** When it stopped publishing (null: alive). */
  diedAtMs: number | null;
  removed: boolean;
  schedules: Record<HeartbeatPublishMode, HeartbeatScheduleCore>;
}

type Event =
  | { atMs: number; seq: number; type: "tick" }
  | { atMs: number; seq: number; type: "reserve"; taskId: string }
  | { atMs: number; seq: number; type: "submit"; addr: string }
  | { atMs: number; seq: number; type: "taskEnd"; addr: string; failed: boolean }
  | { atMs: number; seq: number; type: "die"; addr: string }
  | { atMs: number; seq: number; type: "leaseExpired"; addr: string };

/** An Event before it gets its sequence number (Omit over each member of the union). */
type WithoutSeq<T> = T extends unknown ? Omit<T, "seq"> : never;
type EventInput = WithoutSeq<Event>;

function sampleOf(w: TruthWorker, nowMs: number): WorkerHeartbeat {
  const failures = w.recentFailures.filter(Boolean).length;
  return {
    workerAddr: w.addr,
    taskSlots: TASK_SLOTS,
    reservedSlots: w.reserved,
    runningTasks: w.running,
    cpuPercent: nowMs < w.cpuSpikeUntilMs ? 0.97 : Math.min(1, 0.1 + 0.2 * (w.reserved + w.running)),
    memoryPercent: 0.4,
    memoryAvailableBytes: 1e9,
    memoryTotalBytes: 2e9,
    processRssBytes: 1e8,
    errorRate: w.recentFailures.length === 0 ? 0 : failures / w.recentFailures.length,
    lastHeartbeatMs: nowMs,
  };
}

/** decisionKey: what a Coordinator decides on, apart from the heartbeat's age. */
function decisionKey(v: WorkerHeartbeat | undefined): string {
  if (v === undefined) return "absent";
  const r = DEFAULT_RED_LINES;
  return `${v.taskSlots}/${freeCapacity(v)}/${v.cpuPercent > r.cpu}/${v.memoryPercent > r.memory}/${v.errorRate > r.errorRate}`;
}

function runSeed(seed: number): { requests: number; grants: number; refusals: number; allowedDifferences: number; putsA: number; putsB: number } {
  const rnd = mulberry32(seed);
  const config = defaultCoordinatorCoreConfig();
  const cores: Record<HeartbeatPublishMode, CoordinatorCore> = { EVERY_INTERVAL: new CoordinatorCore(config), ON_CHANGE: new CoordinatorCore(config) };
  const puts: Record<HeartbeatPublishMode, number> = { EVERY_INTERVAL: 0, ON_CHANGE: 0 };
  const workers = new Map<string, TruthWorker>();
  const n = 8 + Math.floor(rnd() * 12);
  for (let i = 0; i < n; i++) {
    const addr = `10.0.0.${i + 1}:9090`;
    const schedule = (mode: HeartbeatPublishMode) =>
      new HeartbeatScheduleCore({ mode, intervalMs: INTERVAL_MS, refreshMs: REFRESH_MS, redLines: DEFAULT_RED_LINES });
    workers.set(addr, {
      addr,
      reserved: 0,
      running: 0,
      cpu: 0.1,
      cpuSpikeUntilMs: 0,
      recentFailures: [],
      diedAtMs: null,
      removed: false,
      schedules: { EVERY_INTERVAL: schedule("EVERY_INTERVAL"), ON_CHANGE: schedule("ON_CHANGE") },
    });
  }
  for (const core of Object.values(cores)) core.handle({ type: "workerListLoaded", workers: [] }, 0);

  // The event queue, ordered by time then insertion.
  const queue: Event[] = [];
  let seq = 0;
  /** push inserts in (atMs, seq) order: binary search for the first later event. */
  const push = (e: EventInput) => {
    const ev = { ...e, seq: seq++ } as Event;
    let lo = next;
    let hi = queue.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (queue[mid]!.atMs <= ev.atMs) lo = mid + 1;
      else hi = mid;
    }
    queue.splice(lo, 0, ev);
  };
  let next = 0;
  const endMs = 60_000;
  for (let t = 0; t <= endMs; t += INTERVAL_MS) push({ atMs: t, type: "tick" });
  // Reservations: about 15/s, enough to fill the cluster at times, with a quiet spell from 25 s to
  // 45 s in which the Workers go idle and only refreshes keep their heartbeats young.
  for (let t = 50, k = 0; t < endMs; t += 1 + Math.floor(rnd() * 130), k++) {
    if (t < 25_000 || t > 45_000 || rnd() < 0.01) push({ atMs: t, type: "reserve", taskId: `task-${k}` });
  }
  // Two Workers stop publishing (cut off from etcd); their lease expires LEASE_TTL_MS later.
  const addrs = [...workers.keys()];
  for (let d = 0; d < 2; d++) {
    const addr = addrs[Math.floor(rnd() * addrs.length)]!;
    push({ atMs: 2_000 + Math.floor(rnd() * 10_000), type: "die", addr });
  }

  let requests = 0;
  let grants = 0;
  let refusals = 0;
  let allowedDifferences = 0;
  const A = cores.EVERY_INTERVAL;
  const B = cores.ON_CHANGE;

  // A Worker that stopped publishing (cut off from etcd, say) still serves and answers truthfully.
  const answerOf = (addr: string): "grant" | "noSlot" => {
    const w = workers.get(addr)!;
    return TASK_SLOTS - w.reserved - w.running > 0 ? "grant" : "noSlot";
  };

  const sameDecision = (a: CandidateResult, b: CandidateResult, now: number): "same" | "allowed" => {
    if (a.err !== undefined || b.err !== undefined) {
      if (a.err !== undefined && b.err !== undefined && a.err.code === b.err.code) return "same";
      // B filtered a Worker A still offers: it must be one that stopped publishing, stale in B only.
      const pick = a.workerAddr;
      expect(pick).toBeDefined();
      return explainStaleInBOnly(pick!, now);
    }
    if (a.workerAddr === b.workerAddr) return "same";
    const va = A.getWorkerView(a.workerAddr)!;
    const vbOfA = B.getWorkerView(a.workerAddr)!;
    const vb = B.getWorkerView(b.workerAddr)!;
    const vaOfB = A.getWorkerView(b.workerAddr)!;
    if (now - vbOfA.lastHeartbeatMs > config.heartbeatTimeoutMs) return explainStaleInBOnly(a.workerAddr, now);
    // The two picks differ only where lastHeartbeatMs decides: each view holds both with the same
    // free capacity (the first key), neither stale nor breaker-open; the penalty ranks after
    // lastHeartbeatMs, so it may differ.
    for (const [x, y] of [
      [va, vaOfB],
      [vb, vbOfA],
    ] as const) {
      expect(freeCapacity(y)).toBe(freeCapacity(x));
      expect(now - y.lastHeartbeatMs).toBeLessThanOrEqual(config.heartbeatTimeoutMs);
      expect(now >= y.circuitBreakerDeadlineMs).toBe(true);
    }
    return "same";
  };

  const explainStaleInBOnly = (addr: string, now: number): "allowed" => {
    const w = workers.get(addr)!;
    const vb = B.getWorkerView(addr)!;
    const va = A.getWorkerView(addr)!;
    expect(w.diedAtMs).not.toBeNull(); // only a Worker that stopped publishing
    expect(now - vb.lastHeartbeatMs).toBeGreaterThan(config.heartbeatTimeoutMs); // B filters it as stale
    expect(now - va.lastHeartbeatMs).toBeLessThanOrEqual(config.heartbeatTimeoutMs); // A does not, yet
    // ... and B's last put of it is at most one refresh period older than A's last sample.
    expect(va.lastHeartbeatMs - vb.lastHeartbeatMs).toBeLessThanOrEqual(REFRESH_MS);
    return "allowed";
  };

  while (next < queue.length) {
    const e = queue[next++]!;
    const now = e.atMs;
    switch (e.type) {
      case "tick":
        for (const w of workers.values()) {
          if (w.diedAtMs !== null) continue;
          if (rnd() < 0.01) w.cpuSpikeUntilMs = now + 600;
          const sample = sampleOf(w, now);
          for (const mode of ["EVERY_INTERVAL", "ON_CHANGE"] as const) {
            const out = w.schedules[mode].handle({ type: "sampleTaken", sample }, now);
            const put = out.instructions.find((i) => i.type === "putHeartbeat");
            if (put && put.type === "putHeartbeat") {
              w.schedules[mode].handle({ type: "putSucceeded", heartbeat: put.heartbeat }, now);
              cores[mode].handle({ type: "workerUpdated", heartbeat: put.heartbeat }, now);
              puts[mode]++;
            }
          }
        }
        break;
      case "submit": {
        const w = workers.get(e.addr)!;
        w.reserved--;
        w.running++;
        break;
      }
      case "taskEnd": {
        const w = workers.get(e.addr)!;
        w.running--;
        w.recentFailures.push(e.failed);
        if (w.recentFailures.length > 10) w.recentFailures.shift();
        break;
      }
      case "die":
        workers.get(e.addr)!.diedAtMs ??= now;
        push({ atMs: now + LEASE_TTL_MS, type: "leaseExpired", addr: e.addr });
        break;
      case "leaseExpired": {
        const w = workers.get(e.addr)!;
        if (w.removed) break;
        w.removed = true;
        A.handle({ type: "workerRemoved", workerAddr: e.addr }, now);
        B.handle({ type: "workerRemoved", workerAddr: e.addr }, now);
        break;
      }
      case "reserve": {
        requests++;
        for (const w of workers.values()) expect(decisionKey(B.getWorkerView(w.addr))).toBe(decisionKey(A.getWorkerView(w.addr)));
        const exclude = new Set<string>();
        for (let attempt = 0; attempt < config.maxCandidates; attempt++) {
          const a = A.handle({ type: "candidateRequested", taskId: e.taskId, excludeAddrs: exclude }, now).reply!;
          const b = B.handle({ type: "candidateRequested", taskId: e.taskId, excludeAddrs: exclude }, now).reply!;
          if (sameDecision(a, b, now) === "allowed") allowedDifferences++;
          if (a.err !== undefined) {
            refusals++;
            break;
          }
          const addr = a.workerAddr;
          const answer = answerOf(addr);
          if (answer === "grant") {
            const w = workers.get(addr)!;
            w.reserved++;
            push({ atMs: now + 10, type: "submit", addr });
            push({ atMs: now + 10 + 300 + Math.floor(rnd() * 6_000), type: "taskEnd", addr, failed: rnd() < 0.15 });
            A.handle({ type: "slotReserved", workerAddr: addr }, now);
            B.handle({ type: "slotReserved", workerAddr: addr }, now);
            grants++;
            break;
          }
          A.handle({ type: "workerWasFull", workerAddr: addr }, now);
          B.handle({ type: "workerWasFull", workerAddr: addr }, now);
          exclude.add(addr);
          if (attempt === config.maxCandidates - 1) refusals++;
        }
        A.validateState();
        B.validateState();
        break;
      }
    }
  }
  return { requests, grants, refusals, allowedDifferences, putsA: puts.EVERY_INTERVAL, putsB: puts.ON_CHANGE };
}

describe("CoordinatorCore under ON_CHANGE publishing", () => {
  test("decides as under EVERY_INTERVAL on seeded workloads: same grants and refusals, picks of equal rank, a frozen Worker filtered at most one refresh period earlier", () => {
    let total = { requests: 0, grants: 0, refusals: 0, allowed: 0, putsA: 0, putsB: 0 };
    for (let seed = 1; seed <= 12; seed++) {
      const r = runSeed(seed);
      total = {
        requests: total.requests + r.requests,
        grants: total.grants + r.grants,
        refusals: total.refusals + r.refusals,
        allowed: total.allowed + r.allowedDifferences,
        putsA: total.putsA + r.putsA,
        putsB: total.putsB + r.putsB,
      };
    }
    // The workload exercised both outcomes, and ON_CHANGE put far fewer heartbeats.
    expect(total.grants).toBeGreaterThan(1_000);
    expect(total.refusals).toBeGreaterThan(100);
    expect(total.putsB * 2).toBeLessThan(total.putsA);
    // Frozen Workers were offered by A after B had filtered them (each time within the bound).
    expect(total.allowed).toBeGreaterThan(0);
  }, 60_000);
});
