/**
 * bench/coordinator/selection.ts: cost of CoordinatorCore candidateRequested and workerUpdated events
 * on realistic views of 100 .. 100,000 Workers, with the baseline measured in the same run: the
 * seed's algorithm (filter every Worker, sort the survivors with candidateRanksBefore, take the
 * first) on the same view. Both must pick the same Worker; the bench checks it.
 *
 *   bun bench/coordinator/selection.ts [--seed 1] [--chunk-loads 64,128,256,512,1024]
 *
 * A view: task slots 4/8/16/32, 0..all of them in use (about 1 in 6 Workers full), heartbeats
 * 0..3 s old, 5% of the Workers stale (11..60 s), 5% over the CPU, 3% over the memory and 2% over
 * the error-rate red line, 2% with an open breaker. Requests: 2 in 3 are first attempts (no
 * exclusions), the rest exclude the previous one or two picks, as the handler's later candidates
 * do; the clock advances 0..2 ms per request.
 *
 * Heartbeats: each Worker beats in turn (random order) with a newer lastHeartbeatMs; half of the
 * beats also change reserved/running slots. So almost every beat moves the Worker in the index.
 */
import { parseArgs } from "node:util";
import type { WorkerHeartbeat } from "../../src/common/registry/worker-heartbeat";
import { defaultCoordinatorCoreConfig } from "../../src/coordinator/core/config";
import { CoordinatorCore } from "../../src/coordinator/core/coordinator-core";
import type { WorkerView } from "../../src/coordinator/core/worker-view";
import { mulberry32 } from "../../test/support/mulberry32";
import { naiveSurvivors } from "../../test/support/naive-selection";

const { values } = parseArgs({
  options: { seed: { type: "string", default: "1" }, "chunk-loads": { type: "string", default: "" } },
});
const SEED = Number(values.seed);
const CONFIG = defaultCoordinatorCoreConfig();
const T0 = 1_700_000_000_000;
const REQUESTS = 3_000;


interface View {
  heartbeats: WorkerHeartbeat[];
  /** Workers whose breaker is opened (3 rejections) at the given time. */
  broken: Array<{ addr: string; atMs: number }>;
}

function makeView(n: number, rnd: () => number): View {
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const heartbeats: WorkerHeartbeat[] = [];
  const broken: View["broken"] = [];
  for (let i = 0; i < n; i++) {
    const taskSlots = [4, 8, 16, 32][int(0, 3)] as number;
    const used = rnd() < 0.15 ? taskSlots : int(0, taskSlots);
    const reservedSlots = Math.min(used, int(0, 2));
    const r = rnd();
    const addr = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:7070`;
    heartbeats.push({
      workerAddr: addr,
      taskSlots,
      reservedSlots,
      runningTasks: used - reservedSlots,
      cpuPercent: r < 0.05 ? 0.95 : rnd() * 0.85,
      memoryPercent: r >= 0.05 && r < 0.08 ? 0.95 : rnd() * 0.85,
      memoryAvailableBytes: 8 << 30,
      memoryTotalBytes: 16 << 30,
      processRssBytes: 1 << 30,
      errorRate: r >= 0.08 && r < 0.1 ? 0.6 : rnd() * 0.1,
      lastHeartbeatMs: rnd() < 0.05 ? T0 - int(11_000, 60_000) : T0 - int(0, 3_000),
    });
    if (rnd() < 0.02) broken.push({ addr, atMs: T0 - int(0, 5_000) });
  }
  return { heartbeats, broken };
}

function buildCore(view: View, chunkLoad?: number): CoordinatorCore {
  const core = new CoordinatorCore(CONFIG, chunkLoad === undefined ? {} : { indexChunkLoad: chunkLoad });
  core.handle({ type: "workerListLoaded", workers: view.heartbeats }, T0);
  for (const { addr, atMs } of view.broken) for (let k = 0; k < CONFIG.circuitBreakerThreshold; k++) core.handle({ type: "slotRejected", workerAddr: addr }, atMs);
  return core;
}

/** naiveSelect is the seed's selection: filter all, sort all, take the first. */
function naiveSelect(views: readonly WorkerView[], exclude: ReadonlySet<string>, now: number): string | undefined {
  return naiveSurvivors(views, exclude, now, CONFIG)[0]?.workerAddr;
}

/** requests makes the (exclude set, now) pairs of `count` decisions, reusing `pick` to build exclusions. */
function makeRequests(count: number, rnd: () => number, pick: (ex: ReadonlySet<string>, now: number) => string | undefined) {
  const out: Array<{ exclude: ReadonlySet<string>; now: number; want: string | undefined }> = [];
  const none: ReadonlySet<string> = new Set();
  let now = T0;
  let prev: string[] = [];
  for (let i = 0; i < count; i++) {
    now += Math.floor(rnd() * 3);
    const attempt = i % 3; // 0: first candidate, 1: second, 2: third
    const exclude = attempt === 0 ? none : new Set(prev.slice(0, attempt));
    const want = pick(exclude, now);
    out.push({ exclude, now, want });
    prev = attempt === 0 ? (want === undefined ? [] : [want]) : want === undefined ? prev : [...prev, want];
  }
  return out;
}

function median(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

/** timeRounds runs `body` (which performs `ops` operations) `rounds` times; returns the median ns/op. */
function timeRounds(rounds: number, ops: number, body: () => void): number {
  const samples: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t = Bun.nanoseconds();
    body();
    samples.push((Bun.nanoseconds() - t) / ops);
  }
  return median(samples);
}

function selectionCost(n: number, chunkLoad?: number): { fastNs: number; naiveNs: number; indexed: number } {
  const rnd = mulberry32(SEED * 1_000_003 + n);
  const view = makeView(n, rnd);
  const core = buildCore(view, chunkLoad);
  const snapshot = [...core.workers()].map((v) => ({ ...v }));
  // The request stream (exclusions = earlier picks) is built with the fast core on a twin of the
  // view; a sample of the decisions is then checked against the naive algorithm.
  const twin = buildCore(view, chunkLoad);
  const requests = makeRequests(REQUESTS, rnd, (ex, now) => twin.handle({ type: "candidateRequested", taskId: "task", excludeAddrs: ex }, now).reply.workerAddr);
  const step = Math.max(1, Math.floor(REQUESTS / Math.max(3, Math.min(REQUESTS, Math.floor(5_000_000 / n)))));
  for (let i = 0; i < requests.length; i += step) {
    const q = requests[i] as (typeof requests)[number];
    const naive = naiveSelect(snapshot, q.exclude, q.now);
    if (naive !== q.want) throw new Error(`n=${n} request ${i}: fast picked ${q.want}, naive ${naive}`);
  }
  let sink = 0;
  const runFast = () => {
    for (const q of requests) sink += core.handle({ type: "candidateRequested", taskId: "task", excludeAddrs: q.exclude }, q.now).reply.workerAddr === undefined ? 0 : 1;
  };
  // Rounds replay the same requests, so the clock goes back to the start each round; that changes
  // nothing here: the first pass moved back the breakers that expire during the interval.
  for (let i = 0; i < 5; i++) runFast();
  const fastNs = timeRounds(15, requests.length, runFast);
  core.validateState();

  // Naive: time-boxed, a few decisions per round at large n.
  const naiveOps = Math.max(1, Math.min(requests.length, Math.floor(2_000_000 / n)));
  const naiveRounds = n >= 100_000 ? 3 : 7;
  const naiveNs = timeRounds(naiveRounds, naiveOps, () => {
    for (let i = 0; i < naiveOps; i++) {
      const q = requests[i] as (typeof requests)[number];
      sink += naiveSelect(snapshot, q.exclude, q.now) === undefined ? 0 : 1;
    }
  });
  if (sink < 0) console.log(sink);
  return { fastNs, naiveNs, indexed: core.indexedCount() };
}

/** overloadCost is the ns per decision when no Worker has a free slot (the NO_EXECUTABLE_SLOT path). */
function overloadCost(n: number): number {
  const rnd = mulberry32(SEED * 31 + n);
  const view = makeView(n, rnd);
  for (const hb of view.heartbeats) {
    hb.reservedSlots = 0;
    hb.runningTasks = hb.taskSlots;
    if (hb.lastHeartbeatMs < T0 - 10_000) hb.lastHeartbeatMs = T0 - 9_000; // keep the view trusted for the whole run
  }
  const core = buildCore(view);
  const exclude: ReadonlySet<string> = new Set([view.heartbeats[0]?.workerAddr ?? ""]);
  let codes = 0;
  // The clock only moves forward (a clock behind an earlier decision takes the O(n) counting path).
  let now = T0;
  const run = () => {
    for (let i = 0; i < 500; i++) codes += core.handle({ type: "candidateRequested", taskId: "task", excludeAddrs: exclude }, (now += 1)).reply.err === undefined ? 1 : 0;
  };
  for (let i = 0; i < 3; i++) run();
  const ns = timeRounds(9, 500, run);
  if (codes !== 0) throw new Error("overload bench picked a worker");
  return ns;
}

function heartbeatRate(n: number, chunkLoad?: number): number {
  const rnd = mulberry32(SEED * 7_777 + n);
  const view = makeView(n, rnd);
  const core = buildCore(view, chunkLoad);
  const latest = view.heartbeats.map((hb) => ({ ...hb }));
  const perRound = Math.max(200_000, n * 2);
  let clock = T0;
  const batch = (): WorkerHeartbeat[] => {
    const out: WorkerHeartbeat[] = [];
    while (out.length < perRound) {
      // One pass: every Worker beats once, in a random order.
      const order = latest.map((_, i) => i);
      for (let i = order.length - 1; i > 0; i--) {
        const j = Math.floor(rnd() * (i + 1));
        [order[i], order[j]] = [order[j] as number, order[i] as number];
      }
      for (const i of order) {
        clock += 1;
        const prev = latest[i] as WorkerHeartbeat;
        const next = { ...prev, lastHeartbeatMs: clock };
        if (rnd() < 0.5) {
          const used = Math.floor(rnd() * (prev.taskSlots + 1));
          next.reservedSlots = Math.min(used, Math.floor(rnd() * 3));
          next.runningTasks = used - next.reservedSlots;
        }
        latest[i] = next;
        out.push(next);
        if (out.length === perRound) break;
      }
    }
    return out;
  };
  const samples: number[] = [];
  for (let r = 0; r < 6; r++) {
    const beats = batch();
    const t = Bun.nanoseconds();
    for (const hb of beats) core.handle({ type: "workerUpdated", heartbeat: hb }, hb.lastHeartbeatMs);
    const ns = Bun.nanoseconds() - t;
    if (r > 0) samples.push(beats.length / (ns / 1e9)); // round 0 is warm-up
  }
  core.validateState();
  return median(samples);
}

const fmt = (x: number, digits = 0) => x.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const pad = (s: string, w: number) => s.padStart(w);
const started = performance.now();

console.log(`CoordinatorCore selection bench (seed ${SEED}, bun ${Bun.version})\n`);
console.log(`1. candidateRequested cost per decision (median of 15 rounds x ${fmt(REQUESTS)} decisions; naive = seed's filter+sort, same view)\n`);
console.log(`${pad("workers", 9)} ${pad("indexed", 9)} ${pad("fast ns", 10)} ${pad("naive ns", 14)} ${pad("naive/fast", 11)}`);
const sizes = [100, 1_000, 10_000, 100_000];
selectionCost(1_000); // JIT warm-up, not reported
const fast = new Map<number, number>();
for (const n of sizes) {
  const r = selectionCost(n);
  fast.set(n, r.fastNs);
  console.log(`${pad(fmt(n), 9)} ${pad(fmt(r.indexed), 9)} ${pad(fmt(r.fastNs), 10)} ${pad(fmt(r.naiveNs), 14)} ${pad(`${fmt(r.naiveNs / r.fastNs)}x`, 11)}`);
}
const ratio = (fast.get(100_000) as number) / (fast.get(1_000) as number);
console.log(`\ncost(100,000) / cost(1,000) = ${fmt(ratio, 2)}  (requirement <= 3: ${ratio <= 3 ? "met" : "NOT MET"})\n`);

const o1 = overloadCost(1_000);
const o100 = overloadCost(100_000);
console.log(`   overload (every Worker full, error with per-filter counts): ${fmt(o1)} ns at 1,000, ${fmt(o100)} ns at 100,000\n`);

console.log("2. workerUpdated throughput (median of 5 rounds of >= 200,000 heartbeats)\n");
console.log(`${pad("workers", 9)} ${pad("updates/s", 12)} ${pad("ns/update", 10)}`);
for (const n of [10_000, 100_000]) {
  const rate = heartbeatRate(n);
  console.log(`${pad(fmt(n), 9)} ${pad(fmt(rate), 12)} ${pad(fmt(1e9 / rate), 10)}   (target > 500,000/s: ${rate > 500_000 ? "met" : "NOT MET"})`);
}

if (values["chunk-loads"] !== "") {
  console.log("\n3. index chunk load (selection ns at 100,000; updates/s at 10,000 and 100,000)\n");
  console.log(`${pad("load", 6)} ${pad("select ns", 10)} ${pad("upd/s 10k", 12)} ${pad("upd/s 100k", 12)}`);
  for (const load of values["chunk-loads"].split(",").map(Number)) {
    const s = selectionCost(100_000, load);
    console.log(`${pad(String(load), 6)} ${pad(fmt(s.fastNs), 10)} ${pad(fmt(heartbeatRate(10_000, load)), 12)} ${pad(fmt(heartbeatRate(100_000, load)), 12)}`);
  }
}
console.log(`\ntotal ${fmt((performance.now() - started) / 1000, 1)} s`);
