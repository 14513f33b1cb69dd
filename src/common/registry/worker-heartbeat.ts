import { z } from "zod";

/**
 * WorkerHeartbeat is the JSON value a Worker puts at `<registry prefix><workerAddr>` in etcd
 * under a kept-alive lease. `cpuPercent`, `memoryPercent` and `errorRate` are fractions in
 * 0..1 (they are compared with the Coordinator's red lines). `lastHeartbeatMs` is wall-clock
 * ms since the epoch: it crosses machines.
 */
/**
 * ExecutorSummary: the Worker's executor pool as operators see it (the dashboard). Carried with
 * each put but never a reason for one: Coordinators do not decide on it, so it does not make the
 * ON_CHANGE schedule put more often. Absent from Workers older than it.
 */
export const ExecutorSummarySchema = z.object({
  /** Executors in the pool (EXECUTOR_COUNT). */
  total: z.number().int().nonnegative().max(1_000_000),
  /** Connected and taking calls. */
  ready: z.number().int().nonnegative().max(1_000_000),
  /** Ready executors running at least one call. */
  busy: z.number().int().nonnegative().max(1_000_000),
  /** Calls waiting for an executor. */
  queuedCalls: z.number().int().nonnegative(),
  /** Executors restarted since the Worker started. */
  restarts: z.number().int().nonnegative(),
});

export type ExecutorSummary = z.infer<typeof ExecutorSummarySchema>;

export const WorkerHeartbeatSchema = z.object({
  workerAddr: z.string().min(1),
  taskSlots: z.number().int().nonnegative(),
  reservedSlots: z.number().int().nonnegative(),
  runningTasks: z.number().int().nonnegative(),
  cpuPercent: z.number().min(0).max(1),
  memoryPercent: z.number().min(0).max(1),
  memoryAvailableBytes: z.number().nonnegative().default(0),
  memoryTotalBytes: z.number().nonnegative().default(0),
  processRssBytes: z.number().nonnegative().default(0),
  errorRate: z.number().min(0).max(1),
  lastHeartbeatMs: z.number().int().nonnegative(),
  executors: ExecutorSummarySchema.optional(),
});

export type WorkerHeartbeat = z.infer<typeof WorkerHeartbeatSchema>;

/** parseWorkerHeartbeat returns the heartbeat, or an error message for an unparsable value. */
export function parseWorkerHeartbeat(
  raw: string,
): { ok: true; heartbeat: WorkerHeartbeat } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (e) {
    return { ok: false, reason: `not JSON: ${(e as Error).message}` };
  }
  const parsed = WorkerHeartbeatSchema.safeParse(json);
  if (!parsed.success) return { ok: false, reason: z.prettifyError(parsed.error).replace(/\n/g, "; ") };
  return { ok: true, heartbeat: parsed.data };
}
