/**
 * bench/worker/task-client.ts: the client process of the Worker benchmark (started by
 * bench/worker/run.ts, never by hand). It measures, over loopback, one no-op task end to end:
 * ReserveWorkerSlot on the Coordinator, SubmitTask(slot_id) on the Worker it names, WatchTasks
 * until the task is terminal (SUCCEEDED is required; anything else is counted as a failure).
 * Beside it, in the same process and run, the baseline: a bare grpc-js unary round trip to a
 * minimal grpc-js server (bench/coordinator/minimal-worker.ts). Then the pieces of a task, to
 * show where the time goes. Prints one JSON object on stdout; progress goes to stderr.
 *
 *   bun bench/worker/task-client.ts --coord HOST:PORT --baseline HOST:PORT [--tasks 1000] [--warmup 2000]
 *       [--cold 500] [--seconds 5] [--inflight 64] [--no-pieces] [--pids worker=PID,coordinator=PID,...] [--rounds 5]
 *       [--submit-wait-ms 1000]   (SubmitTask's wait_ms, as runTask asks it: a task answered at its end needs no watch)
 *       [--etcd ENDPOINT]         (adds the serial series through the SDK's runTask)
 *
 * The task and its baseline are measured in interleaved rounds (medians); the pieces once each.
 *
 * One grpc-js client per address (Coordinator, each Worker, the baseline server) for the
 * whole run: connection set-up is not part of any figure.
 */
import * as grpc from "@grpc/grpc-js";
import { cpuSeconds, descendants } from "../../test/support/proc-scan";
import { parseArgs } from "node:util";
import { CoordinatorServiceClient, type ReserveWorkerSlotResponse } from "../../src/gen/coordinator/v1/coordinator";
import { TaskState, WorkerServiceClient, type Task, type TaskResult, type TaskSnapshot } from "../../src/gen/worker/v1/worker";
import { inputsTask } from "../../test/support/worker-client";
import { latency, throughput } from "../support/measure";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { loadClientConfig } from "../../src/sdk/client-config";
import { interleavedRounds, median } from "../support/rounds";

const { values } = parseArgs({
  options: {
    coord: { type: "string" },
    baseline: { type: "string" },
    tasks: { type: "string", default: "1000" },
    seconds: { type: "string", default: "5" },
    inflight: { type: "string", default: "64" },
    warmup: { type: "string", default: "2000" },
    cold: { type: "string", default: "500" },
    "no-pieces": { type: "boolean", default: false },
    pids: { type: "string", default: "" },
    rounds: { type: "string", default: "5" },
    "submit-wait-ms": { type: "string", default: "1000" },
    etcd: { type: "string", default: "" },
  },
});
if (!values.coord || !values.baseline) throw new Error("--coord and --baseline are required");
const TASKS = Number(values.tasks);
/** Seconds of throughput per series, split over ROUNDS interleaved rounds. */
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const INFLIGHT = Number(values.inflight);
/** End-to-end tasks run before the measured ones; the first COLD of them are reported apart. */
const WARMUP = Number(values.warmup);
const COLD = Math.min(Number(values.cold), WARMUP);
/** Warm-up of each bare series and each piece (the servers are warm by then). */
const SHORT_WARMUP = 300;
const RUN = Math.random().toString(36).slice(2, 8); // task ids stay unique across runs on one Worker

const insecure = grpc.credentials.createInsecure();
const coord = new CoordinatorServiceClient(values.coord, insecure);
const baseline = new WorkerServiceClient(values.baseline, insecure);
const workers = new Map<string, WorkerServiceClient>();
/** worker returns the one cached client of a Worker address. */
function worker(addr: string): WorkerServiceClient {
  let c = workers.get(addr);
  if (!c) workers.set(addr, (c = new WorkerServiceClient(addr, insecure)));
  return c;
}

type Cb<T> = (e: grpc.ServiceError | null, r?: T) => void;
function unary<T>(fn: (cb: Cb<T>) => unknown): Promise<T> {
  return new Promise((resolve, reject) => fn((e, r) => (e ? reject(e) : resolve(r as T))));
}

const reserve = (taskId: string) => unary<ReserveWorkerSlotResponse>((cb) => coord.reserveWorkerSlot({ taskId }, cb));
const requestSlot = (w: WorkerServiceClient, taskId: string) => unary<TaskSnapshot>((cb) => w.requestTaskSlot({ taskId, ttlMs: 5000 }, cb));
const submit = (w: WorkerServiceClient, task: Task, slotId: string, waitMs = 0) => unary<TaskSnapshot>((cb) => w.submitTask({ task, slotId, waitMs, resubmit: false }, cb));
/** SubmitTask's wait_ms, as the SDK's runTask asks it (0: answered at once, a watch follows every task). */
const SUBMIT_WAIT_MS = Number(values["submit-wait-ms"]);
const cancel = (w: WorkerServiceClient, taskId: string) => unary<TaskSnapshot>((cb) => w.cancelTask({ taskId, reason: "bench" }, cb));
const result = (w: WorkerServiceClient, taskId: string) => unary<TaskResult>((cb) => w.getTaskResult({ taskId }, cb));
const bareUnary = (seq: number) => unary<TaskSnapshot>((cb) => baseline.requestTaskSlot({ taskId: `${RUN}-bare-${seq}`, ttlMs: 5000 }, cb));

const TERMINAL = new Set([TaskState.SUCCEEDED, TaskState.FAILED, TaskState.TIMED_OUT, TaskState.CANCELLED]);
/** watchToEnd opens WatchTasks on one task and resolves with its terminal snapshot and the number of snapshots seen. */
function watchToEnd(w: WorkerServiceClient, taskId: string, onFirst?: () => void): Promise<{ last: TaskSnapshot; seen: number }> {
  return new Promise((resolve, reject) => {
    let seen = 0;
    let settled = false;
    const stream = w.watchTasks({ taskIds: [taskId], withResults: false, terminalOnly: false });
    stream.on("data", (s: TaskSnapshot) => {
      if (seen++ === 0) onFirst?.();
      if (!settled && TERMINAL.has(s.state)) {
        settled = true;
        resolve({ last: s, seen });
      }
    });
    const failWith = (e: Error) => {
      if (settled) return;
      settled = true;
      reject(e);
    };
    stream.on("error", failWith);
    stream.on("end", () => failWith(new Error("WatchTasks ended before a terminal snapshot")));
  });
}

// The no-op task: one call of `return x`, its return value kept (ReturnValueHandler).
const NOOP = inputsTask("template", "def main(ctx, x):\n    return x\n", [1]);
const noopTask = (taskId: string): Task => ({ ...NOOP, taskId });

/** A task that ended, or was answered, in a state other than the one expected. */
class WrongState extends Error {}

/** Failures by series and reason (gRPC status name, or the unexpected state). */
const failures: Record<string, Record<string, number>> = {};
function fail(series: string, e: unknown): void {
  const code =
    e instanceof WrongState ? e.message : e instanceof Error && "code" in e ? (grpc.status[(e as grpc.ServiceError).code] ?? String((e as grpc.ServiceError).code)) : String(e);
  const s = (failures[series] ??= {});
  s[code] = (s[code] ?? 0) + 1;
}

/** Per-phase durations (µs) of the end-to-end tasks of the serial run, warm-up excluded. */
const phases = { reserve: [] as number[], submit: [] as number[], watchFirst: [] as number[], watchTerminal: [] as number[] };
let firstAlreadyTerminal = 0;
/** Serial tasks whose SubmitTask answered SUCCEEDED (it waited for the end): no watch. */
let answeredAtEnd = 0;
let snapshotsSeen = 0;
let recordPhases = false;

/** One task end to end. Never rejects: a failure is counted (and the task does not count as done). */
async function task(series: string, seq: number): Promise<boolean> {
  const taskId = `${RUN}-${series}-${seq}`;
  try {
    const t0 = performance.now();
    const slot = await reserve(taskId);
    const t1 = performance.now();
    const w = worker(slot.workerAddr);
    const sub = await submit(w, noopTask(taskId), slot.slotId, SUBMIT_WAIT_MS);
    if (sub.state !== TaskState.RUNNING && sub.state !== TaskState.SUCCEEDED) throw new WrongState(`submit answered ${TaskState[sub.state]}`);
    const t2 = performance.now();
    // Answered at the task's end (wait_ms): nothing to watch.
    if (sub.state === TaskState.SUCCEEDED) {
      if (recordPhases) {
        phases.reserve.push((t1 - t0) * 1000);
        phases.submit.push((t2 - t1) * 1000);
        answeredAtEnd++;
      }
      return true;
    }
    let t3 = 0;
    const { last, seen } = await watchToEnd(w, taskId, () => (t3 = performance.now()));
    const t4 = performance.now();
    if (last.state !== TaskState.SUCCEEDED) throw new WrongState(`ended ${TaskState[last.state]}`);
    if (recordPhases) {
      phases.reserve.push((t1 - t0) * 1000);
      phases.submit.push((t2 - t1) * 1000);
      phases.watchFirst.push((t3 - t2) * 1000);
      phases.watchTerminal.push((t4 - t2) * 1000);
      if (seen === 1) firstAlreadyTerminal++;
      snapshotsSeen += seen;
    }
    return true;
  } catch (e) {
    fail(series, e);
    return false;
  }
}

/** submit + watch with no reservation (slot_id empty: the Worker allocates inline). */
async function submitWatch(w: WorkerServiceClient, series: string, seq: number): Promise<boolean> {
  const taskId = `${RUN}-${series}-${seq}`;
  try {
    await submit(w, noopTask(taskId), "");
    const { last } = await watchToEnd(w, taskId);
    if (last.state !== TaskState.SUCCEEDED) throw new WrongState(`ended ${TaskState[last.state]}`);
    return true;
  } catch (e) {
    fail(series, e);
    return false;
  }
}

const pct = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: s[Math.floor(s.length * 0.5)] ?? NaN, p99: s[Math.floor(s.length * 0.99)] ?? NaN, n: s.length };
};

/** timed runs SHORT_WARMUP + n serial steps, each returning the µs of the part it times; returns p50/p99. */
async function timed(series: string, n: number, step: (seq: number) => Promise<number>): Promise<{ p50: number; p99: number }> {
  const guarded = (seq: number) => step(seq).catch((e) => (fail(series, e), NaN));
  for (let i = 0; i < SHORT_WARMUP; i++) await guarded(i);
  const xs: number[] = [];
  for (let i = SHORT_WARMUP; i < SHORT_WARMUP + n; i++) {
    const us = await guarded(i);
    if (!Number.isNaN(us)) xs.push(us);
  }
  return pct(xs);
}

/** rate runs `call` with INFLIGHT loops for `seconds` and returns successful calls per second. */
async function rate(series: string, call: (seq: number) => Promise<boolean>, seconds = SECONDS): Promise<number> {
  let ok = 0;
  const all = await throughput(async (seq) => {
    if (await call(seq)) ok++;
  }, INFLIGHT, seconds);
  return Math.min(all, ok / seconds);
}

const log = (s: string) => process.stderr.write(`task-client: ${s}\n`);

// CPU accounting: `--pids role=pid,...` names the processes of the run (the orchestrator passes
// them); the Worker's descendants (its Python executors) are counted as "executors".
const roles = new Map<string, number>((values.pids ? values.pids.split(",") : []).map((kv) => [kv.split("=")[0]!, Number(kv.split("=")[1])]));
roles.set("client", process.pid);
/** cpuMs returns the CPU time (ms) used so far by each role. */
function cpuMs(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [role, pid] of roles) {
    out[role] = cpuSeconds(pid) * 1000;
    if (role === "worker") out.executors = descendants(pid).reduce((a, d) => a + cpuSeconds(d) * 1000, 0);
  }
  return out;
}
/** withCpu runs a measurement and returns its result with the CPU ms each role spent on it. */
async function withCpu<T>(f: () => Promise<T>): Promise<{ value: T; cpuMs: Record<string, number> }> {
  const a = cpuMs();
  const value = await f();
  const b = cpuMs();
  return { value, cpuMs: Object.fromEntries(Object.keys(b).map((k) => [k, b[k]! - (a[k] ?? 0)])) };
}

// With --etcd, a third serial series: the same task through the SDK's runTask (what a user's code
// runs: its transport, its retry rules), in the same interleaved rounds.
const sdk = values.etcd ? new BlockxClient(loadClientConfig({ BLOCKX_COORDINATOR_ADDRS: values.coord, ETCD_ENDPOINTS: values.etcd, BLOCKX_INSECURE: "1" })) : null;
async function sdkTask(series: string, seq: number): Promise<boolean> {
  try {
    const run = await sdk!.runTask(noopTask(`${RUN}-${series}-${seq}`));
    if (run.state !== "SUCCEEDED") throw new WrongState(`ended ${run.state}`);
    return true;
  } catch (e) {
    fail(series, e);
    return false;
  }
}

// Learn the Worker's address from one reservation (and check the whole path works).
const probe = await reserve(`${RUN}-probe`);
const workerAddr = probe.workerAddr;
const w = worker(workerAddr);
await cancel(w, `${RUN}-probe`);

// Warm-up: the first tasks of a fresh Worker and Coordinator (and of this process) are slow
// while the JIT settles; the first COLD are reported apart.
log(`warm-up: ${WARMUP} tasks one at a time (the first ${COLD} reported as cold)`);
const cold = COLD > 0 ? await latency((seq) => task("cold", seq), COLD, 0) : { p50: NaN, p99: NaN };
for (let i = COLD; i < WARMUP; i++) await task("warm", i);
// Serial latency and throughput, baseline and task, in interleaved rounds (bench/support/rounds.ts):
// machine noise hits both alike, and the medians of the rounds make two runs agree.
log(`latency: ${TASKS} calls/tasks one at a time, ${ROUNDS} interleaved rounds`);
let lane = 0;
if (sdk) for (let i = 0; i < SHORT_WARMUP; i++) await sdkTask("sdk-warm", i);
const latRounds = await interleavedRounds((sdk ? ["bare", "task", "sdk"] : ["bare", "task"]) as ("bare" | "task" | "sdk")[], ROUNDS, async (k) => {
  if (k === "bare") return latency(bareUnary, Math.ceil(TASKS / ROUNDS), SHORT_WARMUP);
  if (k === "sdk") {
    const tag = `sdk${lane++}`;
    return latency((seq) => sdkTask(tag, seq), Math.ceil(TASKS / ROUNDS), 0);
  }
  const tag = `lat${lane++}`;
  recordPhases = true;
  const r = await latency((seq) => task(tag, seq), Math.ceil(TASKS / ROUNDS), 0);
  recordPhases = false;
  return r;
}, (round) => log(`latency: round ${round} of ${ROUNDS} done`));
log(`throughput: ${INFLIGHT} in flight, ${SECONDS} s per series over ${ROUNDS} interleaved rounds`);
const tputRounds = await interleavedRounds(["bare", "task"] as const, ROUNDS, (k) => {
  const tag = `tput${lane++}`;
  return withCpu(() => (k === "bare" ? throughput(bareUnary, INFLIGHT, SECONDS / ROUNDS) : rate(tag, (seq) => task(tag, seq), SECONDS / ROUNDS)));
}, (round) => log(`throughput: round ${round} of ${ROUNDS} done`));
/**
 * runFigures: the median calls/s of the rounds, and CPU ms scaled so that CPU / (calls/s x SECONDS),
 * what run.ts divides, is the rounds' total CPU over their total calls.
 */
function runFigures(runs: Array<{ value: number; cpuMs: Record<string, number> }>): { perSecond: number; cpuMs: Record<string, number> } {
  const perSecond = median(runs.map((r) => r.value));
  const calls = runs.reduce((n, r) => n + (r.value * SECONDS) / ROUNDS, 0);
  const scale = calls > 0 ? (perSecond * SECONDS) / calls : 0;
  const cpuMs: Record<string, number> = {};
  for (const r of runs) for (const [role, ms] of Object.entries(r.cpuMs)) cpuMs[role] = (cpuMs[role] ?? 0) + ms * scale;
  return { perSecond, cpuMs };
}
const bareRun = runFigures(tputRounds.bare);
const taskRun = runFigures(tputRounds.task);
const bareLat = latRounds.bare;
const e2e1 = { p50: median(latRounds.task.map((l) => l.p50)), p99: median(latRounds.task.map((l) => l.p99)) };
const bareTput = bareRun.perSecond;
const e2eTput = taskRun.perSecond;

const out: Record<string, unknown> = {
  workerAddr,
  tasks: TASKS,
  seconds: SECONDS,
  inflight: INFLIGHT,
  bare: {
    p50: median(bareLat.map((l) => l.p50)),
    p99: median(bareLat.map((l) => l.p99)),
    p50Runs: bareLat.map((l) => l.p50),
    p99Runs: bareLat.map((l) => l.p99),
    perSecond: bareTput,
    cpuMs: bareRun.cpuMs,
  },
  task: { p50: e2e1.p50, p99: e2e1.p99, perSecond: e2eTput, cpuMs: taskRun.cpuMs },
  ...(sdk ? { sdk: { p50: median(latRounds.sdk.map((l) => l.p50)), p99: median(latRounds.sdk.map((l) => l.p99)) } } : {}),
  cold: { ...cold, n: COLD, warmup: WARMUP },
  phases: {
    reserve: pct(phases.reserve),
    submit: pct(phases.submit),
    watchFirstSnapshot: pct(phases.watchFirst),
    watchTerminal: pct(phases.watchTerminal),
    firstSnapshotAlreadyTerminal: firstAlreadyTerminal / Math.max(1, phases.watchTerminal.length),
    snapshotsPerWatch: snapshotsSeen / Math.max(1, phases.watchTerminal.length),
    answeredAtEnd: answeredAtEnd / Math.max(1, phases.reserve.length),
    submitWaitMs: SUBMIT_WAIT_MS,
  },
};

if (!values["no-pieces"]) {
  log("pieces");
  // A finished task the Worker still retains: one run now (the latency rounds' tasks and the
  // throughput series' thousands after them are past its retention by here).
  if (!(await submitWatch(w, "done", 0))) throw new Error(`the task the pieces read back did not succeed: ${JSON.stringify(failures).slice(0, 300)}`);
  const done = `${RUN}-done-0`;
  const p = {
    // The real Worker's gRPC server, cheapest unary: GetTaskResult of a finished task.
    workerUnary: await latency(() => result(w, done), TASKS, SHORT_WARMUP),
    // The same on the Worker's stream: WatchTasks of a finished task (one snapshot, then the end).
    watchFinished: await latency(() => watchToEnd(w, done), TASKS, SHORT_WARMUP),
    // RequestTaskSlot straight to the Worker (one hop); the slot is released by an untimed CancelTask.
    requestSlotDirect: await timed("slot", TASKS, async (seq) => {
      const id = `${RUN}-slot-${seq}`;
      const t = performance.now();
      await requestSlot(w, id);
      const us = (performance.now() - t) * 1000;
      await cancel(w, id);
      return us;
    }),
    // ReserveWorkerSlot through the Coordinator (two hops); released the same way.
    reserveOnly: await timed("res", TASKS, async (seq) => {
      const id = `${RUN}-res-${seq}`;
      const t = performance.now();
      const r = await reserve(id);
      const us = (performance.now() - t) * 1000;
      await cancel(worker(r.workerAddr), id);
      return us;
    }),
    // SubmitTask with no reservation, then WatchTasks to the end: the task minus the Coordinator.
    submitWatch: await latency((seq) => submitWatch(w, "sw", seq), TASKS, SHORT_WARMUP),
  };
  log("pieces: throughput");
  const workerUnaryRun = await withCpu(() => throughput(() => result(w, done), INFLIGHT, SECONDS));
  const submitWatchRun = await withCpu(() => rate("sw-tput", (seq) => submitWatch(w, "sw-tput", seq)));
  const reserveCancelRun = await withCpu(() =>
    rate("res-tput", async (seq) => {
      const id = `${RUN}-rc-${seq}`;
      try {
        const r = await reserve(id);
        await cancel(worker(r.workerAddr), id);
        return true;
      } catch (e) {
        fail("res-tput", e);
        return false;
      }
    }),
  );
  const pt = { workerUnary: workerUnaryRun.value, submitWatch: submitWatchRun.value, reserveCancel: reserveCancelRun.value };
  const cpu = { workerUnary: workerUnaryRun.cpuMs, submitWatch: submitWatchRun.cpuMs, reserveCancel: reserveCancelRun.cpuMs };
  out.pieces = { latency: p, perSecond: pt, cpuMs: cpu };
}
out.failures = failures;

console.log(JSON.stringify(out));
coord.close();
baseline.close();
for (const c of workers.values()) c.close();
process.exit(0);
