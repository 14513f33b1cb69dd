/**
 * bench/scale/scale.ts: the etcd registry at scale. N simulated Workers (bench/scale/sim-workers.ts:
 * the real HeartbeatPublisher, many per process) against one real etcd (the Makefile's, its own
 * data dir per configuration) and real Coordinator processes (dist/blockx coordinator), on loopback.
 *
 * For every N it runs, in one invocation, each heartbeat interval with both publishing modes:
 * EVERY_INTERVAL (every Worker puts every interval: the traffic before issue 22, the baseline) and
 * ON_CHANGE (puts on a change of capacity or red-line side, plus a refresh). The workload is the
 * same for all: reservations at a fixed rate through the Coordinators (round robin), tasks of
 * seeded durations. Per configuration it reports etcd's raft writes/s, lease keepalives/s, CPU,
 * RSS and database size; each Coordinator's CPU, RSS and registry lag (update age); the view
 * staleness (a Worker's change of free capacity until a Coordinator's view holds it); and
 * ReserveWorkerSlot latency against the smallest N of the same configuration. Under the same load
 * and at the same rate it times a bare baseline: the same RequestTaskSlot straight to the Workers'
 * responder with no Coordinator in the path, over a new channel (cold, what a Coordinator's first
 * call to a Worker pays) and over one kept open (warm), and the machine's busy CPU share: what
 * the simulation itself does to any RPC on these two cores, read apart from the Coordinator.
 *
 *   bun bench/scale/scale.ts [--quick] [--n 100,1000,5000,10000] [--intervals 200,2000]
 *     [--window-s 20] [--rate 20] [--coordinators 2] [--sim-procs 2] [--refresh-ms 8000] [--json out.json]
 *     [--skip-above 1000]   (intervals under 1 s only up to this N)
 *     [--modes EVERY_INTERVAL,ON_CHANGE] [--cpu-prof-dir DIR]   (Coordinators' CPU profiles, Bun's --cpu-prof)
 *
 * --quick: N = 100 and 500, 3 s windows (a smoke test that the whole pipeline works).
 */
import * as grpc from "@grpc/grpc-js";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { CoordinatorServiceClient } from "../../src/gen/coordinator/v1/coordinator";
import { Http2UnaryChannel } from "../../src/common/grpc/http2-unary-channel";
import { RequestTaskSlotRequest, WorkerServiceService } from "../../src/gen/worker/v1/worker";
import type { HeartbeatPublishMode } from "../../src/worker/core/heartbeat-schedule";
import { BlockxProcess } from "../../test/support/blockx-process";
import { EtcdProcess } from "../../test/support/etcd";
import { mulberry32 } from "../../test/support/mulberry32";
import { freePort } from "../../test/support/ports";
import { cpuSeconds } from "../../test/support/proc-scan";
import type { SimConfig, SimMessage } from "./sim-workers";
import { BARE_TASK_PREFIX } from "./bare-baseline";
import type { SlotChange, SlotResponderConfig, SlotResponderMessage } from "./slot-responder";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    n: { type: "string" },
    intervals: { type: "string", default: "200,2000" },
    "window-s": { type: "string" },
    rate: { type: "string", default: "20" },
    coordinators: { type: "string", default: "2" },
    "sim-procs": { type: "string", default: "2" },
    "refresh-ms": { type: "string", default: "8000" },
    json: { type: "string" },
    "skip-above": { type: "string", default: "1000" },
    modes: { type: "string", default: "EVERY_INTERVAL,ON_CHANGE" },
    "cpu-prof-dir": { type: "string" },
  },
});
const QUICK = values.quick!;
const NS = (values.n ?? (QUICK ? "100,500" : "100,1000,5000,10000")).split(",").map(Number);
const INTERVALS = values.intervals!.split(",").map(Number);
const WINDOW_S = Number(values["window-s"] ?? (QUICK ? 3 : 20));
const RATE = Number(values.rate);
const COORDINATORS = Number(values.coordinators);
const SIM_PROCS = Number(values["sim-procs"]);
const REFRESH_MS = Number(values["refresh-ms"]);
const MODES = values.modes!.split(",") as HeartbeatPublishMode[];
for (const m of MODES) if (m !== "EVERY_INTERVAL" && m !== "ON_CHANGE") throw new Error(`--modes: EVERY_INTERVAL and/or ON_CHANGE, got ${m}`);
/** With --cpu-prof-dir, each Coordinator writes a CPU profile there when it is stopped (SIGTERM). */
const CPU_PROF_DIR = values["cpu-prof-dir"];
/** Intervals below 1 s are skipped above this N: N x 5 puts/s is far past this machine's etcd (see bench/README.md). */
const SKIP_FAST_ABOVE = Number(values["skip-above"]);
const PREFIX = "/blockx/workers/";
const SIM_TASK_SLOTS = 50;

// ---------------------------------------------------------------- /proc and /metrics readers

/** boxCpu: the machine's busy and total CPU time so far (/proc/stat, all cores). */
function boxCpu(): { busy: number; total: number } {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - f[3]! - f[4]!, total }; // idle and iowait are not busy
}

function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : 0;
}

type Metrics = Map<string, number>;

async function scrape(url: string): Promise<Metrics> {
  const text = await (await fetch(url)).text();
  const out: Metrics = new Map();
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line.trim() === "") continue;
    const i = line.lastIndexOf(" ");
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

const metric = (m: Metrics, name: string) => m.get(name) ?? 0;

/** histogramDelta: bucket upper bounds and the counts observed between two scrapes (not cumulative). */
function histogramDelta(a: Metrics, b: Metrics, name: string): Array<{ le: number; count: number }> {
  const out: Array<{ le: number; count: number }> = [];
  let prev = 0;
  for (const [k, v] of b) {
    const m = new RegExp(`^${name}_bucket\\{le="([^"]+)"\\}$`).exec(k);
    if (!m) continue;
    const cum = v - (a.get(k) ?? 0);
    out.push({ le: m[1] === "+Inf" ? Number.POSITIVE_INFINITY : Number(m[1]), count: cum - prev });
    prev = cum;
  }
  return out;
}

/** quantileOf a histogram (linear inside a bucket), in ms. */
function histogramQuantileMs(h: Array<{ le: number; count: number }>, q: number): number {
  const total = h.reduce((s, b) => s + b.count, 0);
  if (total === 0) return Number.NaN;
  let seen = 0;
  let lo = 0;
  for (const b of h) {
    if (seen + b.count >= q * total && b.count > 0) {
      const hi = Number.isFinite(b.le) ? b.le : lo * 2;
      return (lo + ((q * total - seen) / b.count) * (hi - lo)) * 1000;
    }
    seen += b.count;
    if (Number.isFinite(b.le)) lo = b.le;
  }
  return lo * 1000;
}

/** drawMs draws from a histogram (uniform inside the bucket), in ms. */
function drawMs(h: Array<{ le: number; count: number }>, rnd: () => number): number {
  const total = h.reduce((s, b) => s + b.count, 0);
  let x = rnd() * total;
  let lo = 0;
  for (const b of h) {
    if (x < b.count) return (lo + rnd() * ((Number.isFinite(b.le) ? b.le : lo * 2) - lo)) * 1000;
    x -= b.count;
    if (Number.isFinite(b.le)) lo = b.le;
  }
  return lo * 1000;
}

function pct(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
}

// ---------------------------------------------------------------- one configuration

interface Figures {
  n: number;
  intervalMs: number;
  mode: HeartbeatPublishMode;
  writesPerS: number;
  putsPerS: number;
  keepalivesPerS: number;
  etcdCpu: number;
  etcdRssMb: number;
  etcdDbMb: number;
  coordCpu: number[];
  coordRssMb: number[];
  lagP50Ms: number[];
  lagP99Ms: number[];
  stalenessP50Ms: number;
  stalenessP99Ms: number;
  reserveP50Ms: number;
  reserveP99Ms: number;
  /** The bench's own RequestTaskSlot straight to the responder under the same load: a new channel each (cold) or one kept (warm). */
  bareColdP50Ms: number;
  bareWarmP50Ms: number;
  /** Share of the machine's CPU (all cores) busy during the window. */
  boxBusy: number;
  /** The Coordinators' RequestTaskSlot, sent to answered (blockx_coordinator_worker_rpc_duration_seconds). */
  workerRpcP50Ms: number;
  reserved: number;
  refused: number;
  simPutsPerS: number;
  registered: number;
  viewWorkers: number;
}

/** Set while a configuration is torn down: its simulators' exits are expected then. */
let stopping = false;

async function runOne(n: number, intervalMs: number, mode: HeartbeatPublishMode): Promise<Figures> {
  stopping = false;
  const etcd = await EtcdProcess.start();
  const coords: Array<{ p: BlockxProcess; metricsUrl: string; client?: CoordinatorServiceClient }> = [];
  const sims: Array<{ proc: ReturnType<typeof Bun.spawn>; ready: Promise<number>; reports: Array<(m: SimMessage) => void> }> = [];
  let responder: ReturnType<typeof Bun.spawn> | undefined;
  try {
    // The Worker side of reservations, alone in its process (see slot-responder.ts). Its changes go
    // to the simulator that publishes the Worker: 127.<2 + procIndex>.x.y.
    const responderCfg: SlotResponderConfig = { taskSlots: SIM_TASK_SLOTS, taskMinMs: 1_000, taskMaxMs: 10_000, seed: 1000 };
    let responderReady!: (port: number) => void;
    const responderPort = new Promise<number>((r) => (responderReady = r));
    responder = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", process.execPath, join(import.meta.dir, "slot-responder.ts"), JSON.stringify(responderCfg)], {
      stdout: "inherit",
      stderr: "inherit",
      ipc(m: SlotResponderMessage) {
        if (m.type === "ready") return responderReady(m.port);
        const bySim = new Map<number, SlotChange[]>();
        for (const c of m.changes) {
          const i = Number(c.addr.split(".")[1]) - 2;
          const list = bySim.get(i);
          if (list) list.push(c);
          else bySim.set(i, [c]);
        }
        for (const [i, changes] of bySim) sims[i]?.proc.send({ type: "changes", changes });
      },
    });
    const port = await responderPort;
    for (let c = 0; c < COORDINATORS; c++) {
      const mport = await freePort();
      const p = BlockxProcess.spawn(["coordinator"], {
        COORDINATOR_LISTEN: "127.0.0.1:0",
        ETCD_ENDPOINTS: etcd.endpoint,
        COORDINATOR_REGISTRY_PREFIXES: PREFIX,
        BLOCKX_PROMETHEUS_LISTEN_ADDR: `127.0.0.1:${mport}`,
        BLOCKX_LOG_LEVEL: "info", // nothing per reservation or per registry event at info
        ...(CPU_PROF_DIR ? { BUN_OPTIONS: `--cpu-prof --cpu-prof-md --cpu-prof-dir=${CPU_PROF_DIR}` } : {}),
      });
      coords.push({ p, metricsUrl: `http://127.0.0.1:${mport}/metrics` });
    }
    for (let i = 0; i < SIM_PROCS; i++) {
      const count = Math.floor(n / SIM_PROCS) + (i < n % SIM_PROCS ? 1 : 0);
      const cfg: SimConfig = {
        etcd: etcd.endpoint,
        prefix: PREFIX,
        procIndex: i,
        workers: count,
        port,
        intervalMs,
        mode,
        refreshMs: Math.max(REFRESH_MS, intervalMs),
        taskSlots: SIM_TASK_SLOTS,
        seed: 1000 + i,
      };
      const reports: Array<(m: SimMessage) => void> = [];
      let readyResolve!: (registered: number) => void;
      const ready = new Promise<number>((r) => (readyResolve = r));
      const proc = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", process.execPath, join(import.meta.dir, "sim-workers.ts"), JSON.stringify(cfg)], {
        stdout: "inherit",
        stderr: "inherit",
        ipc(m: SimMessage) {
          if (m.type === "ready") readyResolve(m.workers);
          else reports.shift()?.(m);
        },
      });
      // A simulator that dies (Bun's http2 layer overflowed its stack once at 5,000 Workers per
      // process under heavy load) must not leave the run waiting for it.
      void proc.exited.then((code) => {
        readyResolve(0);
        for (const r of reports.splice(0)) r({ type: "report", publishDelaysMs: [], puts: 0, samples: 0, changes: 0 });
        if (code !== 0 && code !== null && !stopping) console.error(`simulator ${i} exited with ${code}`);
      });
      sims.push({ proc, ready, reports });
    }
    const registered = (await Promise.all(sims.map((s) => s.ready))).reduce((a, b) => a + b, 0);
    for (const c of coords) {
      c.client = new CoordinatorServiceClient(await c.p.grpcAddr(), grpc.credentials.createInsecure());
    }
    // Every Coordinator's view holds every registered Worker (or 60 s passed: the report says).
    const viewDeadline = Date.now() + 60_000;
    for (const c of coords) {
      for (;;) {
        const m = await scrape(c.metricsUrl);
        if (metric(m, "blockx_coordinator_view_workers") >= registered || Date.now() > viewDeadline) break;
        await Bun.sleep(200);
      }
    }

    // The workload: reservations at RATE/s, open loop, round robin over the Coordinators.
    let seq = 0;
    let measuring = false;
    const latencies: number[] = [];
    let reserved = 0;
    let refused = 0;
    let running = true;
    const inflight = new Set<Promise<void>>();
    const reserveOne = (c: CoordinatorServiceClient, taskId: string) =>
      new Promise<void>((resolve) => {
        const t = performance.now();
        c.reserveWorkerSlot({ taskId }, new grpc.Metadata(), { deadline: Date.now() + 10_000 }, (err) => {
          if (measuring) {
            latencies.push(performance.now() - t);
            if (err) refused++;
            else reserved++;
          }
          resolve();
        });
      });
    const driver = (async () => {
      const start = performance.now();
      while (running) {
        const due = start + (seq * 1000) / RATE;
        const wait = due - performance.now();
        if (wait > 0) await Bun.sleep(wait);
        const c = coords[seq % coords.length]!.client!;
        const p = reserveOne(c, `t${n}-${intervalMs}-${seq}`);
        inflight.add(p);
        void p.then(() => inflight.delete(p));
        seq++;
      }
    })();

    // The baseline under the same load, at the same rate, between the reservations: the same
    // RequestTaskSlot straight to the responder with no Coordinator in the path, alternately over
    // a new channel to a new address (what a Coordinator's first call to a Worker pays) and over a
    // channel kept open.
    const bareCold: number[] = [];
    const bareWarm: number[] = [];
    // The channel a Coordinator dials a Worker with (Http2UnaryChannel), as the Coordinator makes it.
    const channel = (addr: string) => new Http2UnaryChannel(addr, { kind: "insecure" }, ["worker"]);
    const warmChannel = channel(`127.249.0.1:${port}`);
    const bareOne = async (cold: boolean, i: number) => {
      const t = performance.now();
      const c = cold ? channel(`127.250.${Math.floor(i / 250) % 250}.${(i % 250) + 1}:${port}`) : warmChannel;
      const request = RequestTaskSlotRequest.encode({ taskId: `${BARE_TASK_PREFIX}${i}`, ttlMs: 1_000 }).finish();
      try {
        await c.unary(WorkerServiceService.requestTaskSlot.path, request, {}, Date.now() + 10_000);
        if (measuring) (cold ? bareCold : bareWarm).push(performance.now() - t);
      } catch {
        // counted nowhere: a failed baseline call is not a latency
      } finally {
        if (cold) c.close();
      }
    };
    const bareDriver = (async () => {
      const start = performance.now() + 500 / RATE; // half a period after the reservations
      for (let i = 0; running; i++) {
        const wait = start + (i * 1000) / RATE - performance.now();
        if (wait > 0) await Bun.sleep(wait);
        const p = bareOne(i % 2 === 0, i);
        inflight.add(p);
        void p.then(() => inflight.delete(p));
      }
    })();

    // Warm up: the tasks reach their steady number, every Worker has been sampled a few times.
    await Bun.sleep(Math.max(QUICK ? 3_000 : 12_000, 3 * intervalMs));

    const etcdPid = etcd.pid!;
    const report = () =>
      Promise.all(
        sims.map(
          (s) =>
            new Promise<Extract<SimMessage, { type: "report" }>>((resolve) => {
              s.reports.push((m) => resolve(m as Extract<SimMessage, { type: "report" }>));
              s.proc.send({ type: "report" });
            }),
        ),
      );
    const etcdUrl = `http://${etcd.endpoint}/metrics`;
    for (const s of sims) s.proc.send({ type: "mark" });
    const a = {
      t: performance.now(),
      etcd: await scrape(etcdUrl),
      etcdCpu: cpuSeconds(etcdPid),
      coords: await Promise.all(coords.map(async (c) => ({ m: await scrape(c.metricsUrl), cpu: cpuSeconds(c.p.proc.pid) }))),
    };
    const boxA = boxCpu();
    measuring = true;
    await Bun.sleep(WINDOW_S * 1000);
    measuring = false;
    const boxB = boxCpu();
    const b = {
      t: performance.now(),
      etcd: await scrape(etcdUrl),
      etcdCpu: cpuSeconds(etcdPid),
      coords: await Promise.all(coords.map(async (c) => ({ m: await scrape(c.metricsUrl), cpu: cpuSeconds(c.p.proc.pid) }))),
    };
    const simReports = await report();
    running = false;
    await driver;
    await bareDriver;
    await Promise.all(inflight);
    warmChannel.close();
    const secs = (b.t - a.t) / 1000;

    const rate = (name: string) => (metric(b.etcd, name) - metric(a.etcd, name)) / secs;
    const lagHists = coords.map((_, i) => histogramDelta(a.coords[i]!.m, b.coords[i]!.m, "blockx_coordinator_registry_update_age_seconds"));
    const delays = simReports.flatMap((r) => r.publishDelaysMs);
    // View staleness = (change -> sampled into a put) + (put -> applied by the Coordinator). The first
    // part is measured per change; the second per update by each Coordinator: combine by drawing.
    const rnd = mulberry32(42);
    const staleness: number[] = [];
    for (const h of lagHists) {
      if (h.reduce((s, x) => s + x.count, 0) === 0) continue;
      for (let i = 0; i < Math.min(delays.length, 20_000); i++) {
        const d = delays[Math.floor(rnd() * delays.length)]!;
        staleness.push(d + drawMs(h, rnd));
      }
    }
    staleness.sort((x, y) => x - y);
    latencies.sort((x, y) => x - y);
    return {
      n,
      intervalMs,
      mode,
      writesPerS: rate("etcd_server_proposals_committed_total"),
      putsPerS: rate('etcd_mvcc_put_total') || rate("etcd_debugging_mvcc_put_total"),
      keepalivesPerS: rate('grpc_server_msg_received_total{grpc_method="LeaseKeepAlive",grpc_service="etcdserverpb.Lease",grpc_type="bidi_stream"}'),
      etcdCpu: (b.etcdCpu - a.etcdCpu) / secs,
      etcdRssMb: rssBytes(etcdPid) / 2 ** 20,
      etcdDbMb: metric(b.etcd, "etcd_mvcc_db_total_size_in_bytes") / 2 ** 20,
      coordCpu: coords.map((_, i) => (b.coords[i]!.cpu - a.coords[i]!.cpu) / secs),
      coordRssMb: coords.map((c) => rssBytes(c.p.proc.pid) / 2 ** 20),
      lagP50Ms: lagHists.map((h) => histogramQuantileMs(h, 0.5)),
      lagP99Ms: lagHists.map((h) => histogramQuantileMs(h, 0.99)),
      stalenessP50Ms: pct(staleness, 0.5),
      stalenessP99Ms: pct(staleness, 0.99),
      reserveP50Ms: pct(latencies, 0.5),
      reserveP99Ms: pct(latencies, 0.99),
      bareColdP50Ms: pct(bareCold.sort((x, y) => x - y), 0.5),
      bareWarmP50Ms: pct(bareWarm.sort((x, y) => x - y), 0.5),
      boxBusy: (boxB.busy - boxA.busy) / (boxB.total - boxA.total),
      workerRpcP50Ms: histogramQuantileMs(
        coords.map((_, i) => histogramDelta(a.coords[i]!.m, b.coords[i]!.m, "blockx_coordinator_worker_rpc_duration_seconds")).reduce((sum, h) => sum.map((x, j) => ({ le: x.le, count: x.count + (h[j]?.count ?? 0) }))),
        0.5,
      ),
      reserved,
      refused,
      simPutsPerS: simReports.reduce((s, r) => s + r.puts, 0) / secs,
      registered,
      viewWorkers: Math.min(...b.coords.map((c) => metric(c.m, "blockx_coordinator_view_workers"))),
    };
  } finally {
    stopping = true;
    for (const s of sims) s.proc.kill("SIGKILL");
    responder?.kill("SIGKILL");
    for (const c of coords) {
      c.client?.close();
      c.p.proc.kill(CPU_PROF_DIR ? "SIGTERM" : "SIGKILL"); // a profile is written at a clean exit only
    }
    await Promise.all([...sims.map((s) => s.proc.exited), ...coords.map((c) => c.p.exited), responder?.exited]);
    await etcd.destroy();
  }
}

// ---------------------------------------------------------------- the run

const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : "-");
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : "-");
const maxOf = (xs: number[]) => Math.max(...xs.filter(Number.isFinite));
const MODE_LABEL: Record<HeartbeatPublishMode, string> = { EVERY_INTERVAL: "every interval (before)", ON_CHANGE: "on change (after)" };

console.log(
  `bench/scale: N=${NS.join(",")}, intervals ${INTERVALS.join(",")} ms, refresh ${REFRESH_MS} ms, ${COORDINATORS} coordinators, ` +
    `${SIM_PROCS} simulator processes, ${RATE} reservations/s, ${WINDOW_S} s windows`,
);
console.log("");
console.log(
  "| N | interval | publishing | etcd writes/s | puts/s | keepalives/s | etcd CPU | etcd RSS | etcd db | coord CPU (max) | coord RSS (max) | lag p50/p99 | staleness p50/p99 | reserve p50/p99 | p50 / smallest N | Worker RPC p50 | bare RPC p50 cold / warm | bare cold / smallest N | reserve over bare cold / smallest N | box CPU busy | refused | in view |",
);
console.log("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
const all: Figures[] = [];
for (const n of NS) {
  for (const intervalMs of INTERVALS) {
    if (intervalMs < 1_000 && n > SKIP_FAST_ABOVE) continue;
    for (const mode of MODES) {
      const f = await runOne(n, intervalMs, mode);
      all.push(f);
      const base = all.find((x) => x.n === NS[0] && x.intervalMs === intervalMs && x.mode === mode)!;
      console.log(
        `| ${n} | ${intervalMs} ms | ${MODE_LABEL[mode]} | ${f0(f.writesPerS)} | ${f0(f.putsPerS)} | ${f0(f.keepalivesPerS)} | ${f0(f.etcdCpu * 100)}% | ` +
          `${f0(f.etcdRssMb)} MB | ${f1(f.etcdDbMb)} MB | ${f0(maxOf(f.coordCpu) * 100)}% | ${f0(maxOf(f.coordRssMb))} MB | ` +
          `${f0(maxOf(f.lagP50Ms))} / ${f0(maxOf(f.lagP99Ms))} ms | ${f0(f.stalenessP50Ms)} / ${f0(f.stalenessP99Ms)} ms | ` +
          `${f1(f.reserveP50Ms)} / ${f1(f.reserveP99Ms)} ms | ${(f.reserveP50Ms / base.reserveP50Ms).toFixed(2)}x | ${f1(f.workerRpcP50Ms)} ms | ${f1(f.bareColdP50Ms)} / ${f1(f.bareWarmP50Ms)} ms | ${(f.bareColdP50Ms / base.bareColdP50Ms).toFixed(2)}x | ${(f.reserveP50Ms / f.bareColdP50Ms / (base.reserveP50Ms / base.bareColdP50Ms)).toFixed(2)}x | ${f0(f.boxBusy * 100)}% | ${f.refused} of ${f.reserved + f.refused} | ${f.viewWorkers} |`,
      );
    }
  }
}
if (values.json) writeFileSync(values.json, JSON.stringify(all, null, 2));
