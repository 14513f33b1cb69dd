import type { FaultEvent, FaultKind } from "./fault-schedule";
import { childPids } from "../support/proc-scan";
import type { Member, SoakCluster } from "./soak-cluster";

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

/** A Worker stops answering (SIGSTOP: a hung process that keeps its sockets), then resumes (SIGCONT). */
class WorkerHang implements Fault {
  readonly kind = "workerHang";
  constructor(
    private readonly c: SoakCluster,
    private readonly target: WorkerTarget,
  ) {}
  async inject(e: FaultEvent): Promise<FaultEffect> {
    const w = this.c.workers[this.target(e.target)]!;
    const pid = w.pid;
    if (pid === undefined) return { what: `${w.name} not running`, effective: false };
    process.kill(pid, "SIGSTOP");
    try {
      await Bun.sleep(e.durationMs);
    } finally {
      process.kill(pid, "SIGCONT");
    }
    return { what: `${w.name} hung for ${e.durationMs} ms`, effective: true };
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

export function faultsFor(c: SoakCluster, workerTarget: WorkerTarget): Record<FaultKind, Fault> {
  return {
    workerKill: new ProcessCrash("workerKill", c.workers, workerTarget),
    executorKill: new ExecutorKill(c, workerTarget),
    workerHang: new WorkerHang(c, workerTarget),
    etcdRestart: new EtcdRestart(c),
    coordinatorRestart: new ProcessCrash("coordinatorRestart", c.coordinators),
    backendDegrade: new BackendDegrade(c),
  };
}
