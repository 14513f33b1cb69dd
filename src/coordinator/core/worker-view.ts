import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";

/**
 * WorkerView is what CoordinatorCore knows about one Worker (the seed's `core.WorkerView`): the
 * last heartbeat read from etcd plus three fields that exist only in this Coordinator process.
 * The local fields are never read from etcd and never written back; a Coordinator restart loses
 * them, which only loses routing bias, never correctness.
 */
export interface WorkerView extends WorkerHeartbeat {
  /** The Worker is filtered out while `now < circuitBreakerDeadlineMs`; 0 = never opened. */
  circuitBreakerDeadlineMs: number;
  /** Rejections + timeouts since the last success. */
  recentFailureCount: number;
  /** Ranking tie-breaker (smaller first); equals recentFailureCount. */
  penalty: number;
}

/** usedTotal is the number of slots the Worker reports as taken: reserved + running. */
export function usedTotal(v: WorkerHeartbeat): number {
  return v.reservedSlots + v.runningTasks;
}

/** freeCapacity is `taskSlots - usedTotal`; it can be negative when a Worker over-reports. */
export function freeCapacity(v: WorkerHeartbeat): number {
  return v.taskSlots - (v.reservedSlots + v.runningTasks);
}

/** newWorkerView makes the view of a Worker seen for the first time: all local fields zero. */
export function newWorkerView(hb: WorkerHeartbeat): WorkerView {
  return { ...copyHeartbeat(hb), circuitBreakerDeadlineMs: 0, recentFailureCount: 0, penalty: 0 };
}

/** copyHeartbeat copies exactly the heartbeat fields (so a caller's object is never retained). */
export function copyHeartbeat(hb: WorkerHeartbeat): WorkerHeartbeat {
  return {
    workerAddr: hb.workerAddr,
    taskSlots: hb.taskSlots,
    reservedSlots: hb.reservedSlots,
    runningTasks: hb.runningTasks,
    cpuPercent: hb.cpuPercent,
    memoryPercent: hb.memoryPercent,
    memoryAvailableBytes: hb.memoryAvailableBytes,
    memoryTotalBytes: hb.memoryTotalBytes,
    processRssBytes: hb.processRssBytes,
    errorRate: hb.errorRate,
    lastHeartbeatMs: hb.lastHeartbeatMs,
  };
}
