import { Database } from "bun:sqlite";
import { join } from "node:path";
import { readRegisteredWorkers } from "../../src/sdk/worker-registry";
import type { FaultEvent, FaultKind, Thresholds } from "./fault-schedule";
import { childPids } from "../support/proc-scan";
import type { Member, SoakCluster } from "./soak-cluster";
import type { PausedRuns, SdkEvents } from "./sdk-events";
import type { BlockxClient } from "../../src/sdk/blockx-client";
import { TaskState, type TaskSnapshot } from "../../src/gen/worker/v1/worker";

/** What one injection did: `effective` is false when it hit nothing (no executor to kill, a process already gone). */
export interface FaultEffect {
  readonly what: string;
  readonly effective: boolean;
}

/** Fault: one kind of failure, injected into the cluster and recovered from (restart, resume, heal). */
export interface Fault {
  readonly kind: FaultKind;
  /** inject applies the fault, waits its duration, and undoes it; resolves with what it hit. */
  inject(e: FaultEvent): Promise<FaultEffect>;
}

/**
 * WorkerTarget names the Worker a Worker fault hits, given the schedule's seeded choice: the
 * soak passes one that prefers a Worker running its tasks, so that a kill or a hang always has
 * a task to lose (a fault on an idle Worker proves nothing about resubmission; on a slow machine
 * the seeded Worker was sometimes idle and the soak saw no resubmission at all).
 */
export type WorkerTarget = (seeded: number) => number;

/** A Worker or a Coordinator crashes (SIGKILL: no drain) and is started again at the same address. */
class ProcessCrash implements Fault {
  constructor(
    readonly kind: "workerKill" | "coordinatorRestart",
    private readonly members: readonly Member[],
    private readonly target: WorkerTarget = (seeded) => seeded,
  ) {}
  async inject(e: FaultEvent): Promise<FaultEffect> {
    const m = this.members[this.target(e.target)]!;
    const wasRunning = m.pid !== undefined;
    await m.kill();
    await Bun.sleep(e.durationMs);
    await m.restart();
    return { what: `${m.name} ${wasRunning ? "killed" : "was not running"}, restarted after ${e.durationMs} ms`, effective: wasRunning };
  }
}

/** Every Python executor of a Worker is SIGKILLed at once (the Worker restarts them and retries their calls). */
class ExecutorKill implements Fault {
  readonly kind = "executorKill";
  constructor(
    private readonly c: SoakCluster,
    private readonly target: WorkerTarget,
  ) {}
  async inject(e: FaultEvent): Promise<FaultEffect> {
    const w = this.c.workers[this.target(e.target)]!;
    const pids = w.pid === undefined ? [] : childPids(w.pid);
    let killed = 0;
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
        killed++;
      } catch {
        // already gone
      }
    }
    return { what: `${killed} executors of ${w.name} killed`, effective: killed > 0 };
  }
}

/**
 * A Worker stops (SIGSTOP: a hung process, or a paused VM, that keeps its sockets), then resumes
 * (SIGCONT). `workerHang` for 2-8 s; `pauseLease` past its lease (etcd's and the table store's: it
 * comes back with its runs over, STALE_RUN); `pauseStatement` past the store's statement timeout
 * but within the lease (a transaction it held open is ended by the server; its own store calls
 * meet their deadlines the moment it resumes); `pausePastPatience` past the SDK's lost-after time
 * but within the lease (the client has rerun its tasks elsewhere; it resumes with its lease and
 * its runs, and every commit they still send must be refused).
 */
class WorkerPause implements Fault {
  constructor(
    readonly kind: "workerHang" | "pauseLease" | "pauseStatement" | "pausePastPatience",
    private readonly c: SoakCluster,
    private readonly target: WorkerTarget,
    private readonly t: Thresholds,
    private readonly observe: PauseObserver,
  ) {}
  async inject(e: FaultEvent): Promise<FaultEffect> {
    const w = this.c.workers[this.target(e.target)]!;
    const pid = w.pid;
    if (pid === undefined) return { what: `${w.name} not running`, effective: false };
    // A pause past the client's patience proves the fence only if the paused runs still have rows to
    // commit when they resume: it waits (a few seconds at most) for a running task that has not yet
    // committed half its calls, so the pause does not land between a task's last commit and its end.
    if (this.kind === "pausePastPatience") await untilTaskWithCallsLeft(this.observe.client, w.addr, 5_000);
    const running = await runningTasks(this.observe.client, w.addr);
    process.kill(pid, "SIGSTOP");
    try {
      if (this.kind === "pausePastPatience") await this.untilRerunElsewhere(w.addr, running, e.durationMs);
      else await Bun.sleep(e.durationMs);
    } finally {
      // A process that died meanwhile is not an error here: the soak reports its crash.
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // gone
      }
    }
    if (w.pid !== pid) return { what: `${w.name} died while it was to be ${this.kind === "workerHang" ? "hung" : "paused"}`, effective: false };
    // How its runs end is asked while the soak goes on (a run that comes back superseded ends at its next commit).
    this.observe.paused.track(endsOf(this.observe.client, w.addr, running).then((ends) => void this.observe.paused.tally(ends)));
    const past = {
      workerHang: "",
      pauseLease: ` (lease ${this.t.leaseMs} ms)`,
      pauseStatement: ` (statement timeout ${this.t.statementMs} ms, lease ${this.t.leaseMs} ms)`,
      pausePastPatience: ` (SDK lost after ${this.t.lostAfterMs} ms, lease ${this.t.leaseMs} ms)`,
    }[this.kind];
    return { what: `${w.name} ${this.kind === "workerHang" ? "hung" : "paused"} for ${e.durationMs} ms${past}, ${running.length} tasks running on it`, effective: true };
  }

  /**
   * untilRerunElsewhere keeps a pause past the client's patience going until the client has sent one
   * of the paused Worker's tasks to another Worker and a second has passed (its new run has claimed
   * the task: the paused run is superseded while its lease lives), or for `maxMs` (the schedule's
   * duration, under two thirds of the lease), whichever comes first. A machine slow to resubmit would
   * otherwise resume the Worker before the new run's claim, and its run would just finish.
   */
  private async untilRerunElsewhere(addr: string, running: readonly string[], maxMs: number): Promise<void> {
    const started = performance.now();
    for (;;) {
      const now = performance.now();
      const rerunAt = this.observe.sdk.resubmittedAt(running, addr, started);
      if (now - started >= maxMs || (rerunAt !== null && now - rerunAt >= 1_000 && now - started >= this.t.lostAfterMs + 500)) return;
      await Bun.sleep(50);
    }
  }
}

/** What a pause needs to find out how the runs of the paused Worker ended: the soak's client, where to count, what the client did. */
export interface PauseObserver {
  readonly client: BlockxClient;
  readonly paused: PausedRuns;
  readonly sdk: SdkEvents;
}

/** untilTaskWithCallsLeft: returns once a task RUNNING on the Worker has committed under half its calls, or after `withinMs`. */
async function untilTaskWithCallsLeft(client: BlockxClient, addr: string, withinMs: number): Promise<void> {
  const deadline = performance.now() + withinMs;
  while (performance.now() < deadline) {
    const list = await client.listTasks(addr).catch(() => undefined);
    const early = (list?.tasks ?? []).some((t) => t.snapshot?.state === TaskState.RUNNING && t.snapshot.callsTotal > 1 && t.snapshot.callsSucceeded * 2 < t.snapshot.callsTotal);
    if (early) return;
    await Bun.sleep(20);
  }
}

/** runningTasks: the ids of the tasks RUNNING on a Worker now ([] when it does not answer). */
async function runningTasks(client: BlockxClient, addr: string): Promise<string[]> {
  const list = await client.listTasks(addr).catch(() => undefined);
  return (list?.tasks ?? []).filter((t) => t.snapshot?.state === TaskState.RUNNING).map((t) => t.snapshot!.taskId);
}

/** endsOf: the tasks' snapshots on their Worker once none is RUNNING any more (or 15 s have passed). */
async function endsOf(client: BlockxClient, addr: string, taskIds: readonly string[]): Promise<(TaskSnapshot | undefined)[]> {
  const until = performance.now() + 15_000;
  for (;;) {
    await Bun.sleep(500);
    const list = await client.listTasks(addr).catch(() => undefined);
    const byId = new Map((list?.tasks ?? []).map((t) => [t.snapshot?.taskId, t.snapshot]));
    const ends = taskIds.map((id) => byId.get(id));
    if (performance.now() > until || (list && ends.every((s) => s !== undefined && s.state !== TaskState.RUNNING))) return ends;
  }
}

/**
 * A Worker's link is partitioned (nothing passes either way; TCP delivers it all at the heal):
 * `etcdPartition` from etcd past its lease, while it still reaches its clients and the store (its
 * registration expires and the Coordinators drop it, its runs go on); `clientPartition` from its
 * clients and the Coordinators past the SDK's lost-after time (they resubmit its tasks elsewhere
 * while it goes on writing: its late commits must be refused).
 */
class LinkPartition implements Fault {
  constructor(
    readonly kind: "etcdPartition" | "clientPartition",
    private readonly c: SoakCluster,
    private readonly target: WorkerTarget,
    private readonly sdk: SdkEvents,
    private readonly t: Thresholds,
  ) {}
  async inject(e: FaultEvent): Promise<FaultEffect> {
    const w = this.c.workers[this.target(e.target)]!;
    if (w.pid === undefined || !w.links) return { what: `${w.name} not running`, effective: false };
    const relay = this.kind === "etcdPartition" ? w.links.etcd : w.links.clients;
    const since = performance.now();
    relay.partition();
    let evidence = "";
    try {
      if (this.kind === "etcdPartition") {
        // Past the lease, the Coordinators must no longer see it.
        await Bun.sleep(Math.min(e.durationMs - 200, this.t.leaseMs + 700));
        const registered = await readRegisteredWorkers(this.c.clientConfig()).then((ws) => ws.some((r) => r.addr === w.addr), () => undefined);
        evidence = registered === undefined ? ", registry not read" : registered ? ", still registered past its lease" : ", its registration expired";
        await Bun.sleep(Math.max(0, e.durationMs - (performance.now() - since)));
      } else {
        await Bun.sleep(e.durationMs);
        evidence = `, ${this.sdk.count("workerLost", { addr: w.addr, sinceMs: since })} runs of it given up by the SDK`;
      }
    } finally {
      relay.heal();
    }
    const what = this.kind === "etcdPartition" ? `cut off from etcd for ${e.durationMs} ms (lease ${this.t.leaseMs} ms)` : `cut off from its clients for ${e.durationMs} ms (lost after ${this.t.lostAfterMs} ms)`;
    return { what: `${w.name} ${what}${evidence}`, effective: true };
  }
}

/**
 * The table store stops answering. Postgres: one Worker's connections (the Worker a Worker fault would hit) go silent (the relay closes
 * the server side and leaves the Worker's open, hearing nothing: a hard primary loss), and new ones
 * are accepted and never answered, for the duration; then new connections pass again (the silent
 * ones stay silent: the Worker's own deadlines must give up on them). SQLite: the shared file's
 * write lock is held by another process for the duration (every Worker's writes and lease renewals
 * wait, then fail after the busy timeout).
 */
class StoreSilent implements Fault {
  readonly kind = "storeSilent";
  constructor(
    private readonly c: SoakCluster,
    private readonly target: WorkerTarget,
    private readonly t: Thresholds,
  ) {}
  async inject(e: FaultEvent): Promise<FaultEffect> {
    const w = this.c.workers[this.target(e.target)]!;
    const relay = w.links?.store;
    if (relay) {
      if (w.pid === undefined) return { what: `${w.name} not running`, effective: false };
      relay.blackhole();
      await Bun.sleep(e.durationMs);
      relay.heal();
      return { what: `${w.name}'s Postgres connections silent for ${e.durationMs} ms (it gives up on a call after ${this.t.deadlineMs} ms)`, effective: true };
    }
    // A Parquet dataset's commits take its writer lock, its leases and runs its catalog's: both are held.
    const parquet = this.c.tableStore.startsWith("parquet://") ? this.c.tableStore.slice("parquet://".length) : null;
    const files = parquet ? [join(parquet, "_blockx", "writer.lock"), join(parquet, "_blockx", "catalog.sqlite")] : [this.c.tableStore];
    const what = parquet ? "the Parquet dataset's writer lock and catalog" : "the SQLite file's write lock";
    const held = await holdWriteLocks(files, e.durationMs);
    return { what: held ? `${what} held by another process for ${e.durationMs} ms (busy timeout ${this.t.statementMs} ms)` : `${what} could not be taken`, effective: held };
  }
}

/** holdWriteLocks takes each SQLite file's write lock (tried for 2 s in all) and holds them for `ms`. */
async function holdWriteLocks(paths: readonly string[], ms: number): Promise<boolean> {
  const dbs = paths.map((p) => new Database(p));
  const begun: Database[] = [];
  try {
    const until = performance.now() + 2_000;
    for (const db of dbs) {
      db.exec("PRAGMA busy_timeout = 0");
      for (;;) {
        try {
          db.exec("BEGIN IMMEDIATE");
          begun.push(db);
          break;
        } catch {
          if (performance.now() > until) return false;
          await Bun.sleep(10);
        }
      }
    }
    await Bun.sleep(ms);
    return true;
  } finally {
    for (const db of begun) db.exec("ROLLBACK");
    for (const db of dbs) db.close();
  }
}

/** One Worker's Postgres connections are reset, and new ones refused, for the duration (a severed link). */
class StoreSevered implements Fault {
  readonly kind = "storeSevered";
  constructor(
    private readonly c: SoakCluster,
    private readonly target: WorkerTarget,
  ) {}
  async inject(e: FaultEvent): Promise<FaultEffect> {
    const w = this.c.workers[this.target(e.target)]!;
    const relay = w.links?.store;
    if (!relay || w.pid === undefined) return { what: `${w.name} ${relay ? "not running" : "has no store connection (SQLite)"}`, effective: false };
    const open = relay.connections;
    relay.refuse();
    relay.cut();
    await Bun.sleep(e.durationMs);
    relay.heal();
    return { what: `${w.name}'s ${open} Postgres connections reset, new ones refused for ${e.durationMs} ms`, effective: open > 0 };
  }
}

/**
 * The answer to the next SubmitTask (or SubmitTasks) a Worker receives is lost after the request
 * arrived whole, and the connection is reset: the Worker accepted the task, the client does not
 * know. Every Worker's client relay is armed; the first matching request fires one and the others
 * are disarmed. The relays see sizes only (TLS): the soak pads its single submissions and its
 * batches to sizes no other request reaches (see SUBMIT_BYTES).
 */
class SubmitAnswerLost implements Fault {
  constructor(
    readonly kind: "submitAnswerLost" | "submitTasksAnswerLost",
    private readonly c: SoakCluster,
    private readonly sdk: SdkEvents,
  ) {}
  async inject(e: FaultEvent): Promise<FaultEffect> {
    const relays = this.c.workers.flatMap((w) => (w.links ? [{ w, r: w.links.clients }] : []));
    const size = this.kind === "submitAnswerLost" ? { minBytes: SUBMIT_BYTES.single, maxBytes: SUBMIT_BYTES.batchFrom } : { minBytes: SUBMIT_BYTES.batchFrom };
    const since = performance.now();
    const fired = relays.map(({ w, r }) => r.dropAnswerAfterRequest({ ...size, resetAfterMs: 500 }).then((f) => (f ? w : undefined)));
    const timer = setTimeout(() => relays.forEach(({ r }) => r.disarm()), e.durationMs);
    const hit = await Promise.race([Promise.all(fired).then(() => undefined), ...fired.map((p) => p.then((w) => w ?? new Promise<never>(() => {})))]);
    clearTimeout(timer);
    relays.forEach(({ r }) => r.disarm());
    if (!hit) return { what: `no ${this.kind === "submitAnswerLost" ? "SubmitTask" : "SubmitTasks"} within ${e.durationMs} ms`, effective: false };
    await Bun.sleep(1_000); // the client hears the reset, and says what it made of it
    const path = this.kind === "submitAnswerLost" ? "single" : "batch";
    const uncertain = this.sdk.count("submitUncertain", { addr: hit.addr, sinceMs: since, path });
    return { what: `${this.kind === "submitAnswerLost" ? "a SubmitTask" : "a SubmitTasks"} answer of ${hit.name} lost after ${Math.round(performance.now() - since - 1_000)} ms; the SDK followed ${uncertain} tasks there as uncertain`, effective: true };
  }
}

/**
 * SUBMIT_BYTES: request sizes the lost-answer faults aim at. The soak pads a single task's source
 * so that a SubmitTask is `single`..`batchFrom` bytes, and a batch's so that a SubmitTasks of two
 * or more tasks is at least `batchFrom` (a batch task submitted alone later stays below it... unless
 * its own padding reaches it: see soak-run's BATCH_PAD_BYTES). No other request of the soak comes
 * near either.
 */
export const SUBMIT_BYTES = { single: 5_000, batchFrom: 20_000 } as const;

/**
 * Two faults at once (from PAIRABLE_KINDS), started together; effective when both were. The first
 * hits the Worker a Worker fault would; the second another one (two faults on one process would
 * mostly hide each other: a paused Worker cannot also be killed).
 */
class TwoAtOnce implements Fault {
  readonly kind = "twoAtOnce";
  constructor(
    private readonly workers: number,
    private readonly target: WorkerTarget,
    private readonly faultsWith: (target: WorkerTarget) => Record<FaultKind, Fault>,
  ) {}
  async inject(e: FaultEvent): Promise<FaultEffect> {
    const [a, b] = e.pair!;
    const first = this.target(a.target);
    const second = b.target === first ? (b.target + 1) % this.workers : b.target;
    const [ra, rb] = await Promise.all([this.faultsWith(() => first)[a.kind].inject(a), this.faultsWith(() => second)[b.kind].inject(b)]);
    return { what: `${a.kind}: ${ra.what} + ${b.kind}: ${rb.what}`, effective: ra.effective && rb.effective };
  }
}

/** etcd dies (SIGKILL) and comes back with the same data dir and port. */
class EtcdRestart implements Fault {
  readonly kind = "etcdRestart";
  constructor(private readonly c: SoakCluster) {}
  async inject(e: FaultEvent): Promise<FaultEffect> {
    const wasRunning = this.c.etcd.pid !== undefined;
    await this.c.etcd.stop();
    await Bun.sleep(e.durationMs);
    await this.c.etcd.start();
    return { what: `etcd ${wasRunning ? "down" : "was not running; started"} for ${e.durationMs} ms`, effective: wasRunning };
  }
}

/** The chain backend slows down and fails a share of requests (retryable), then heals. */
class BackendDegrade implements Fault {
  readonly kind = "backendDegrade";
  constructor(private readonly c: SoakCluster) {}
  async inject(e: FaultEvent): Promise<FaultEffect> {
    this.c.setBackendFaults({ latencyMs: e.latencyMs, errorRate: e.errorRate });
    try {
      await Bun.sleep(e.durationMs);
    } finally {
      this.c.setBackendFaults({ latencyMs: 0, errorRate: 0 });
    }
    // The Workers re-read the faults file every 200 ms; a degradation shorter than two reads may not be seen.
    return { what: `backend +${e.latencyMs} ms, ${Math.round(e.errorRate * 100)}% errors for ${e.durationMs} ms`, effective: e.durationMs >= 400 && (e.latencyMs > 0 || e.errorRate > 0) };
  }
}

export function faultsFor(c: SoakCluster, workerTarget: WorkerTarget, sdk: SdkEvents, t: Thresholds, observe: PauseObserver): Record<FaultKind, Fault> {
  return {
    workerKill: new ProcessCrash("workerKill", c.workers, workerTarget),
    executorKill: new ExecutorKill(c, workerTarget),
    workerHang: new WorkerPause("workerHang", c, workerTarget, t, observe),
    etcdRestart: new EtcdRestart(c),
    coordinatorRestart: new ProcessCrash("coordinatorRestart", c.coordinators),
    backendDegrade: new BackendDegrade(c),
    etcdPartition: new LinkPartition("etcdPartition", c, workerTarget, sdk, t),
    clientPartition: new LinkPartition("clientPartition", c, workerTarget, sdk, t),
    storeSilent: new StoreSilent(c, workerTarget, t),
    storeSevered: new StoreSevered(c, workerTarget),
    submitAnswerLost: new SubmitAnswerLost("submitAnswerLost", c, sdk),
    submitTasksAnswerLost: new SubmitAnswerLost("submitTasksAnswerLost", c, sdk),
    pauseLease: new WorkerPause("pauseLease", c, workerTarget, t, observe),
    pauseStatement: new WorkerPause("pauseStatement", c, workerTarget, t, observe),
    pausePastPatience: new WorkerPause("pausePastPatience", c, workerTarget, t, observe),
    twoAtOnce: new TwoAtOnce(c.workers.length, workerTarget, (target) => faultsFor(c, target, sdk, t, observe)),
  };
}
