/**
 * The fixed limits of the Worker's slot and task protocol (SYSTEM.md sections 3, 5 and 11). They
 * are part of the contract with clients, not tuning knobs, so they are constants rather than config.
 */
/** task_timeout_ms = 0 means this: 5 minutes, counted from acceptance. */
export const DEFAULT_TASK_TIMEOUT_MS = 300_000;
/** The largest task_timeout_ms a SubmitTask may ask for: 8 h. */
export const MAX_TASK_TIMEOUT_MS = 28_800_000;
/** The largest ttl_ms a RequestTaskSlot may ask for: 1 h (the Coordinator sends 5000). */
export const MAX_SLOT_TTL_MS = 3_600_000;
/** The longest cancel reason kept in a snapshot; longer ones are cut (they are retained in memory). */
export const MAX_CANCEL_REASON_CHARS = 1024;

/**
 * WorkerCoreConfig holds the parameters of WorkerCore. `defaultWorkerCoreConfig(workerAddr)` gives
 * the spec's defaults; `validateWorkerCoreConfig` returns every broken rule (empty = valid).
 */
export interface WorkerCoreConfig {
  /** TASK_SLOTS: how many tasks may hold a slot (ALLOCATED or RUNNING) at once. */
  readonly taskSlots: number;
  /** How long a terminal task stays queryable and idempotent after its terminal state. >= 1. */
  readonly retentionMs: number;
  /** The address this Worker registers; copied into every snapshot's worker_addr. */
  readonly workerAddr: string;
  /**
   * WORKER_MAX_SLOT_TTL_MS: the longest an ALLOCATED slot lives from its allocation, whatever
   * ttl_ms says and however often the request is repeated (so a client cannot hold slots for
   * long without submitting). Absent: DEFAULT_MAX_SLOT_TTL_MS.
   */
  readonly maxSlotTtlMs?: number;
  /**
   * WORKER_RETAINED_TASKS_MAX: ended tasks kept for their retention at most; beyond, the oldest
   * ended are forgotten first (RETENTION_EVICTED). Absent: DEFAULT_RETAINED_TASKS_MAX.
   */
  readonly retainedTasksMax?: number;
  /**
   * WORKER_RETAINED_BYTES_MAX: bytes the ended tasks keep together (results, logs, tracebacks, as
   * the adapter measures them: taskRetainedSizeKnown) at most; beyond, the oldest ended are
   * forgotten first. Absent: DEFAULT_RETAINED_BYTES_MAX.
   */
  readonly retainedBytesMax?: number;
}

export const DEFAULT_RETAINED_TASKS_MAX = 10_000;
export const DEFAULT_RETAINED_BYTES_MAX = 512 * 1024 * 1024;

export const DEFAULT_TASK_SLOTS = 50;
export const DEFAULT_RETENTION_MS = 300_000;
/** Twice the Coordinator's 5 s ttl_ms: room for its same-Worker retry, not for hoarding. */
export const DEFAULT_MAX_SLOT_TTL_MS = 10_000;

export function defaultWorkerCoreConfig(workerAddr: string): WorkerCoreConfig {
  return { taskSlots: DEFAULT_TASK_SLOTS, retentionMs: DEFAULT_RETENTION_MS, workerAddr };
}

/** validateWorkerCoreConfig lists the broken rules, each naming the field, the rule and the value. */
export function validateWorkerCoreConfig(c: WorkerCoreConfig): string[] {
  const problems: string[] = [];
  for (const name of ["taskSlots", "retentionMs"] as const) {
    const v = c[name];
    if (!Number.isSafeInteger(v) || v < 1) problems.push(`${name}: expected an integer >= 1, got ${v}`);
  }
  if (c.maxSlotTtlMs !== undefined && (!Number.isSafeInteger(c.maxSlotTtlMs) || c.maxSlotTtlMs < 1 || c.maxSlotTtlMs > MAX_SLOT_TTL_MS)) {
    problems.push(`maxSlotTtlMs: expected an integer in 1..${MAX_SLOT_TTL_MS}, got ${c.maxSlotTtlMs}`);
  }
  for (const name of ["retainedTasksMax", "retainedBytesMax"] as const) {
    const v = c[name];
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 1)) problems.push(`${name}: expected an integer >= 1, got ${v}`);
  }
  if (typeof c.workerAddr !== "string" || c.workerAddr.length === 0) {
    problems.push(`workerAddr: expected a non-empty string, got ${JSON.stringify(c.workerAddr)}`);
  }
  return problems;
}
