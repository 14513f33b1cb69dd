import type { FaultEvent, FaultKind } from "./fault-schedule";
import { childPids } from "../support/proc-scan";
import type { Member, SoakCluster } from "./soak-cluster";

/** Fault: one kind of failure, injected into the cluster and recovered from (restart, resume, heal). */
export interface Fault {
  readonly kind: FaultKind;
  /** inject applies the fault, waits its duration, and undoes it; resolves with what it hit. */
  inject(e: FaultEvent): Promise<string>;
}

/** A Worker or a Coordinator crashes (SIGKILL: no drain) and is started again at the same address. */
class ProcessCrash implements Fault {
  constructor(
    readonly kind: "workerKill" | "coordinatorRestart",
    private readonly members: readonly Member[],
  ) {}
  async inject(e: FaultEvent): Promise<string> {
    const m = this.members[e.target]!;
    await m.kill();
    await Bun.sleep(e.durationMs);
    await m.restart();
    return `${m.name} killed, restarted after ${e.durationMs} ms`;
  }
}

/** Every Python executor of a Worker is SIGKILLed at once (the Worker restarts them and retries their calls). */
class ExecutorKill implements Fault {
  readonly kind = "executorKill";
  constructor(private readonly c: SoakCluster) {}
  async inject(e: FaultEvent): Promise<string> {
    const w = this.c.workers[e.target]!;
    const pids = w.pid === undefined ? [] : childPids(w.pid);
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    return `${pids.length} executors of ${w.name} killed`;
  }
}

/** A Worker stops answering (SIGSTOP: a hung process that keeps its sockets), then resumes (SIGCONT). */
class WorkerHang implements Fault {
  readonly kind = "workerHang";
  constructor(private readonly c: SoakCluster) {}
  async inject(e: FaultEvent): Promise<string> {
    const w = this.c.workers[e.target]!;
    const pid = w.pid;
    if (pid === undefined) return `${w.name} not running`;
    process.kill(pid, "SIGSTOP");
    try {
      await Bun.sleep(e.durationMs);
    } finally {
      process.kill(pid, "SIGCONT");
    }
    return `${w.name} hung for ${e.durationMs} ms`;
  }
}

/** etcd dies (SIGKILL) and comes back with the same data dir and port. */
class EtcdRestart implements Fault {
  readonly kind = "etcdRestart";
  constructor(private readonly c: SoakCluster) {}
  async inject(e: FaultEvent): Promise<string> {
    await this.c.etcd.stop();
    await Bun.sleep(e.durationMs);
    await this.c.etcd.start();
    return `etcd down for ${e.durationMs} ms`;
  }
}

/** The chain backend slows down and fails a share of requests (retryable), then heals. */
class BackendDegrade implements Fault {
  readonly kind = "backendDegrade";
  constructor(private readonly c: SoakCluster) {}
  async inject(e: FaultEvent): Promise<string> {
    this.c.setBackendFaults({ latencyMs: e.latencyMs, errorRate: e.errorRate });
    try {
      await Bun.sleep(e.durationMs);
    } finally {
      this.c.setBackendFaults({ latencyMs: 0, errorRate: 0 });
    }
    return `backend +${e.latencyMs} ms, ${Math.round(e.errorRate * 100)}% errors for ${e.durationMs} ms`;
  }
}

export function faultsFor(c: SoakCluster): Record<FaultKind, Fault> {
  return {
    workerKill: new ProcessCrash("workerKill", c.workers),
    executorKill: new ExecutorKill(c),
    workerHang: new WorkerHang(c),
    etcdRestart: new EtcdRestart(c),
    coordinatorRestart: new ProcessCrash("coordinatorRestart", c.coordinators),
    backendDegrade: new BackendDegrade(c),
  };
}
