import { candidateRanksBefore } from "../../src/coordinator/core/coordinator-core";
import type { CoordinatorCoreConfig } from "../../src/coordinator/core/config";
import { freeCapacity, type WorkerView } from "../../src/coordinator/core/worker-view";

/**
 * naiveSurvivors is the seed's selection written the straightforward way: apply every hard
 * filter to every Worker and sort the survivors by candidateRanksBefore. The randomized test
 * uses it as the reference and the selection bench as the baseline.
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
      freeCapacity(v) > 0,
  );
  return survivors.sort((a, b) => (candidateRanksBefore(a, b) ? -1 : candidateRanksBefore(b, a) ? 1 : 0));
}
