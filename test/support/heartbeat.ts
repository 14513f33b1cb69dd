import type { WorkerHeartbeat } from "../../src/common/registry/worker-heartbeat";

/** testHeartbeat is a healthy Worker with 4 free slots; tests override what they are about. */
export function testHeartbeat(workerAddr: string, overrides: Partial<WorkerHeartbeat> = {}): WorkerHeartbeat {
  return {
    workerAddr,
    taskSlots: 4,
    reservedSlots: 0,
    runningTasks: 0,
    cpuPercent: 0.1,
    memoryPercent: 0.2,
    memoryAvailableBytes: 1_000,
    memoryTotalBytes: 2_000,
    processRssBytes: 100,
    errorRate: 0,
    lastHeartbeatMs: 0,
    ...overrides,
  };
}
