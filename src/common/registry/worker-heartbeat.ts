import { z } from "zod";

/**
 * WorkerHeartbeat is the JSON value a Worker puts at `<registry prefix><workerAddr>` in etcd
 * under a kept-alive lease. `cpuPercent`, `memoryPercent` and `errorRate` are fractions in
 * 0..1 (they are compared with the Coordinator's red lines). `lastHeartbeatMs` is wall-clock
 * ms since the epoch: it crosses machines.
 */
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
