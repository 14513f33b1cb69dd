/**
 * bench/scale/sim-workers.ts: many simulated Workers in one process, for bench/scale/scale.ts.
 *
 * Each simulated Worker sends the etcd traffic of a real Worker: a lease of its own (granted, kept
 * alive every TTL/3, granted again when lost) and puts of real WorkerHeartbeat values under it, when
 * the real HeartbeatScheduleCore (the decision code of src/worker/adapters/heartbeat-publisher.ts)
 * says so. The calls go through etcd3's RPC clients directly, and the keepalives of all the
 * process's leases share one stream: etcd receives the same requests (one LeaseKeepAlive message
 * per lease per TTL/3, one Put per heartbeat), while a process can carry thousands of Workers. The
 * publisher itself (an etcd3 Lease object and a keepalive stream per Worker) costs about 5 ms of
 * CPU per registration under Bun here, which starved 5,000 Workers in one process of their own
 * keepalives. Slot counts change as a real Worker's do under the workload: the Worker side of a
 * reservation (RequestTaskSlot) is answered by bench/scale/slot-responder.ts in a process of its
 * own, whose changes reach this process through the parent ("changes" messages).
 *
 * It records, for every change of a Worker's free capacity, how long until the Worker sampled it
 * into a heartbeat (the publishing side of view staleness; the Coordinator reports the rest as
 * blockx_coordinator_registry_update_age_seconds).
 *
 * Run by scale.ts only: argv[2] is a JSON SimConfig; IPC messages "mark", "report" and "changes".
 */
import { createEtcdClient } from "../../src/common/etcd/etcd-client";
import type { WorkerHeartbeat } from "../../src/common/registry/worker-heartbeat";
import type { Etcd3 } from "etcd3";
import {
  DEFAULT_RED_LINES,
  HeartbeatScheduleCore,
  type HeartbeatPublishMode,
  type HeartbeatScheduleEvent,
  type HeartbeatScheduleInstruction,
} from "../../src/worker/core/heartbeat-schedule";
import { mulberry32 } from "../../test/support/mulberry32";
import { CoreDriver } from "../../src/common/core/core-driver";
import type { SlotChange } from "./slot-responder";

export interface SimConfig {
  readonly etcd: string;
  readonly prefix: string;
  /** Index of this process: its Workers' addresses are 127.<2 + procIndex>.x.y. */
  readonly procIndex: number;
  readonly workers: number;
  /** The slot responder's port: every Worker's address is 127.x.y.z on it. */
  readonly port: number;
  readonly intervalMs: number;
  readonly mode: HeartbeatPublishMode;
  readonly refreshMs: number;
  readonly taskSlots: number;
  readonly seed: number;
}

export type SimMessage =
  | { type: "ready"; /** Workers registered (their first put succeeded). */ workers: number }
  | { type: "report"; publishDelaysMs: number[]; puts: number; samples: number; changes: number };

const cfg = JSON.parse(process.argv[2]!) as SimConfig;
/** Noise of the host figures (cpu, memory, RSS). */
const rnd = mulberry32(cfg.seed);


interface SimWorker {
  readonly addr: string;
  reserved: number;
  running: number;
  /** Times of free-capacity changes not sampled yet. */
  changedAtMs: number[];
  lastSampledFree: number;
  publisher: SimPublisher;
}

const LEASE_TTL_S = 10;

/**
 * KeepaliveStream keeps every lease of the process alive over one LeaseKeepAlive stream, each
 * lease every TTL/3 (what etcd3's Lease does per lease, on a stream of its own). A lease etcd
 * answers with TTL 0 is lost: its owner hears it and registers again.
 */
class KeepaliveStream {
  private readonly due = new Map<string, { atMs: number; onLost: () => void }>();
  private stream: Awaited<ReturnType<Etcd3["leaseClient"]["leaseKeepAlive"]>> | null = null;
  private opening = false;

  constructor(private readonly client: Etcd3) {
    setInterval(() => this.tick(), 100);
  }

  add(id: string, onLost: () => void): void {
    this.due.set(id, { atMs: Date.now() + (LEASE_TTL_S * 1000) / 3, onLost });
  }

  remove(id: string): void {
    this.due.delete(id);
  }

  private tick(): void {
    if (this.stream === null) {
      if (!this.opening) void this.open();
      return;
    }
    const now = Date.now();
    for (const [id, d] of this.due) {
      if (d.atMs > now) continue;
      d.atMs = now + (LEASE_TTL_S * 1000) / 3;
      this.stream.write({ ID: id });
    }
  }

  private async open(): Promise<void> {
    this.opening = true;
    try {
      const stream = await this.client.leaseClient.leaseKeepAlive();
      stream.on("data", (res: { ID: string; TTL: string }) => {
        if (Number(res.TTL) > 0) return;
        const d = this.due.get(String(res.ID));
        this.due.delete(String(res.ID));
        d?.onLost();
      });
      const drop = () => {
        if (this.stream === stream) this.stream = null;
      };
      stream.on("error", drop);
      stream.on("end", drop);
      this.stream = stream;
    } catch {
      // etcd away: try again on the next tick
    } finally {
      this.opening = false;
    }
  }
}

/**
 * SimPublisher: one Worker's heartbeat publishing, decided by the real HeartbeatScheduleCore and
 * carried out as HeartbeatPublisher does (sample, put under the lease, a new lease when it was
 * lost or a put failed, timers where the core says).
 */
class SimPublisher {
  private lease: string | null = null;
  private readonly core: HeartbeatScheduleCore;
  private readonly driver: CoreDriver<HeartbeatScheduleEvent, HeartbeatScheduleInstruction>;
  published = 0;
  sampled = 0;

  constructor(
    private readonly client: Etcd3,
    private readonly keepalives: KeepaliveStream,
    private readonly key: string,
    private readonly sample: () => WorkerHeartbeat,
  ) {
    this.core = new HeartbeatScheduleCore({ mode: cfg.mode, intervalMs: cfg.intervalMs, refreshMs: cfg.refreshMs, redLines: DEFAULT_RED_LINES });
    this.driver = new CoreDriver(this.core, { name: "heartbeat", carryOut: (i) => this.carryOut(i), nowMs: () => Date.now(), timeAdvanced: { type: "timeAdvanced" } });
  }

  start(): void {
    this.driver.advance();
  }

  private carryOut(ins: HeartbeatScheduleInstruction): void {
    if (ins.type === "putHeartbeat") return void this.put(ins.heartbeat);
    this.sampled++;
    this.driver.post({ type: "sampleTaken", sample: this.sample() });
  }

  private async put(heartbeat: WorkerHeartbeat): Promise<void> {
    try {
      if (this.lease === null) {
        const granted = await this.client.leaseClient.leaseGrant({ TTL: LEASE_TTL_S, ID: 0 });
        const id = String(granted.ID);
        this.lease = id;
        this.driver.post({ type: "leaseReplaced" });
        this.keepalives.add(id, () => {
          if (this.lease !== id) return;
          this.lease = null;
          this.driver.post({ type: "leaseReplaced" });
        });
      }
      await this.client.kv.put({ key: Buffer.from(this.key), value: Buffer.from(JSON.stringify(heartbeat)), lease: this.lease });
      this.published++;
      this.driver.post({ type: "putSucceeded", heartbeat });
    } catch {
      if (this.lease !== null) this.keepalives.remove(this.lease);
      this.lease = null;
      this.driver.post({ type: "leaseReplaced" });
      this.driver.post({ type: "putFailed" });
    }
  }
}

const workers = new Map<string, SimWorker>();
let publishDelaysMs: number[] = [];
let changes = 0;
let putsAtMark = 0;
let samplesAtMark = 0;

function applyChange(c: SlotChange): void {
  const w = workers.get(c.addr);
  if (!w) return;
  w.reserved = c.reserved;
  w.running = c.running;
  if (c.freeChangedAtMs === null) return;
  w.changedAtMs.push(c.freeChangedAtMs);
  changes++;
}

function sample(w: SimWorker): WorkerHeartbeat {
  const now = Date.now();
  const free = cfg.taskSlots - w.reserved - w.running;
  if (free !== w.lastSampledFree) {
    for (const c of w.changedAtMs) publishDelaysMs.push(now - c);
    w.lastSampledFree = free;
  }
  w.changedAtMs.length = 0;
  const load = (w.reserved + w.running) / cfg.taskSlots;
  return {
    workerAddr: w.addr,
    taskSlots: cfg.taskSlots,
    reservedSlots: w.reserved,
    runningTasks: w.running,
    // What a real Worker reports moves all the time; under the red lines here.
    cpuPercent: Math.min(0.85, 0.05 + 0.6 * load + 0.1 * rnd()),
    memoryPercent: 0.3 + 0.05 * rnd(),
    memoryAvailableBytes: 8e9 + Math.floor(rnd() * 1e8),
    memoryTotalBytes: 16e9,
    processRssBytes: 2e8 + Math.floor(rnd() * 1e7),
    errorRate: 0,
    lastHeartbeatMs: now,
  };
}

const client = await createEtcdClient({ endpoints: [cfg.etcd], dialTimeoutMs: 10_000 });
const keepalives = new KeepaliveStream(client);
for (let j = 0; j < cfg.workers; j++) {
  const addr = `127.${2 + cfg.procIndex}.${Math.floor(j / 250)}.${(j % 250) + 1}:${cfg.port}`;
  const w: SimWorker = { addr, reserved: 0, running: 0, changedAtMs: [], lastSampledFree: cfg.taskSlots, publisher: undefined as never };
  w.publisher = new SimPublisher(client, keepalives, cfg.prefix + addr, () => sample(w));
  workers.set(addr, w);
}
// Workers start at random phases, as independently started processes do, spread over at least one
// interval and at most RAMP_PER_S registrations a second (a lease grant, its keepalive stream and a
// put each: thousands at once in one process starve their own keepalives).
const RAMP_PER_S = 500;
if (process.env.SIM_DEBUG) {
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    let published = 0;
    for (const w of workers.values()) if (w.publisher.published > 0) published++;
    console.error(`sim ${cfg.procIndex}: timer late by ${(now - last - 1000).toFixed(0)} ms, ${published} workers published, cpu ${JSON.stringify(process.cpuUsage())}`);
    last = now;
  }, 1000);
}
const rampMs = Math.max(cfg.intervalMs, (cfg.workers / RAMP_PER_S) * 1000);
for (const w of workers.values()) setTimeout(() => w.publisher.start(), rnd() * rampMs);

const totalPuts = () => {
  let n = 0;
  for (const w of workers.values()) n += w.publisher.published;
  return n;
};
const totalSamples = () => {
  let n = 0;
  for (const w of workers.values()) n += w.publisher.sampled;
  return n;
};

// Ready once every Worker has put its first heartbeat, or after READY_TIMEOUT_MS with those that
// did (a configuration past what the machine can carry: the report says how many registered).
const READY_TIMEOUT_MS = 240_000;
const readyDeadline = Date.now() + READY_TIMEOUT_MS;
let registered = 0;
for (;;) {
  registered = 0;
  for (const w of workers.values()) if (w.publisher.published > 0) registered++;
  if (registered === workers.size || Date.now() > readyDeadline) break;
  await Bun.sleep(250);
}
process.send!({ type: "ready", workers: registered } satisfies SimMessage);

process.on("message", (m: { type: "mark" } | { type: "report" } | { type: "changes"; changes: SlotChange[] }) => {
  if (m.type === "changes") {
    for (const c of m.changes) applyChange(c);
  } else if (m.type === "mark") {
    publishDelaysMs = [];
    changes = 0;
    putsAtMark = totalPuts();
    samplesAtMark = totalSamples();
  } else if (m.type === "report") {
    process.send!({
      type: "report",
      publishDelaysMs,
      puts: totalPuts() - putsAtMark,
      samples: totalSamples() - samplesAtMark,
      changes,
    } satisfies SimMessage);
  }
});
