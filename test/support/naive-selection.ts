import type { CoordinatorCoreConfig } from "../../src/coordinator/core/config";
import type { WorkerView } from "../../src/coordinator/core/worker-view";

/*
 * An independent reference of the seed's selection (seeds/coordinator.zh.md, "SelectCandidate"),
 * written from its text, importing nothing of the implementation's ranking or capacity code, so
 * that a ranking bug in coordinator-core cannot hide behind the test that should catch it:
 *
 *   hard filters: in excludeAddrs; heartbeat older than HeartbeatTimeoutMs
 *   (now - LastHeartbeatMs > HeartbeatTimeoutMs); CPUPercent / MemoryPercent / ErrorRate over
 *   their red lines; circuit breaker not yet expired; FreeCapacity() <= 0, where
 *   FreeCapacity() = TaskSlots - (ReservedSlots + RunningTasks).
 *   order: larger FreeCapacity first, then newer LastHeartbeatMs, then smaller Penalty, then
 *   WorkerAddr in lexicographic order (Go compares strings byte by byte).
 */

/** seedFreeCapacity: TaskSlots - UsedTotal(), UsedTotal() = ReservedSlots + RunningTasks. */
function seedFreeCapacity(v: WorkerView): number {
  return v.taskSlots - (v.reservedSlots + v.runningTasks);
}

/** rankKey: the seed's sort keys, each ascending. */
function rankKey(v: WorkerView): [number, number, number, Buffer] {
  return [-seedFreeCapacity(v), -v.lastHeartbeatMs, v.penalty, Buffer.from(v.workerAddr, "utf8")];
}

function compareKeys(a: ReturnType<typeof rankKey>, b: ReturnType<typeof rankKey>): number {
  for (let i = 0; i < 3; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    if (x !== y) return x < y ? -1 : 1;
  }
  return Buffer.compare(a[3], b[3]);
}

/**
 * naiveSurvivors is the seed's selection written the straightforward way: apply every hard
 * filter to every Worker and sort the survivors by the seed's keys. The randomized test uses it
 * as the reference and the selection bench as the baseline.
 */
export function naiveSurvivors(
  views: Iterable<WorkerView>,
  exclude: ReadonlySet<string>,
  now: number,
  c: CoordinatorCoreConfig,
): WorkerView[] {
  const survivors = [...views].filter(
    (v) =>
      !exclude.has(v.workerAddr) &&
      !(now - v.lastHeartbeatMs > c.heartbeatTimeoutMs) &&
      !(v.cpuPercent > c.cpuRedLine) &&
      !(v.memoryPercent > c.memoryRedLine) &&
      !(v.errorRate > c.errorRateRedLine) &&
      !(now < v.circuitBreakerDeadlineMs) &&
      seedFreeCapacity(v) > 0,
  );
  return survivors
    .map((v) => ({ v, key: rankKey(v) }))
    .sort((a, b) => compareKeys(a.key, b.key))
    .map((x) => x.v);
}
