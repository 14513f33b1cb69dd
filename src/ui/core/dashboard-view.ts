import { TaskPhase, TaskState, type TaskListEntry } from "../../gen/worker/v1/worker";
import type { RegisteredWorker } from "../../sdk/worker-registry";

/** WorkerRow: one Worker as the dashboard shows it (from its etcd heartbeat). */
export interface WorkerRow {
  readonly addr: string;
  readonly cluster: string;
  readonly lane: string;
  readonly taskSlots: number;
  readonly freeSlots: number;
  readonly reservedSlots: number;
  readonly runningTasks: number;
  /** 0..1 fractions, as the heartbeat carries them. */
  readonly cpu: number;
  readonly memory: number;
  readonly errorRate: number;
  readonly rssBytes: number;
  readonly heartbeatAgeMs: number;
}

/** TaskRow: one task with its progress, rate and ETA (null when it cannot be told yet). */
export interface TaskRow {
  readonly taskId: string;
  readonly workerAddr: string;
  readonly state: string;
  readonly phase: string;
  readonly owner: string;
  readonly function: string;
  readonly callsTotal: number;
  readonly callsDone: number;
  readonly callsFailed: number;
  readonly callsRetried: number;
  /** 0..1; 1 once every call is done. */
  readonly progress: number;
  /** Calls done per second since the task was accepted. */
  readonly callsPerSecond: number | null;
  readonly etaSeconds: number | null;
  readonly acceptedAtMs: number;
  readonly finishedAtMs: number;
  readonly error: string;
}

export interface Overview {
  readonly atMs: number;
  readonly workers: readonly WorkerRow[];
  readonly tasks: readonly TaskRow[];
  /** Workers registered in etcd that did not answer ListTasks. */
  readonly unreachable: readonly { addr: string; message: string }[];
}

function enumName(e: Record<number, string>, v: number | undefined, prefix: string): string {
  const n = v === undefined ? undefined : e[v];
  return n === undefined ? "UNKNOWN" : n.replace(prefix, "");
}

export function workerRow(w: RegisteredWorker): WorkerRow {
  const h = w.heartbeat;
  return {
    addr: w.addr,
    cluster: w.cluster,
    lane: w.lane,
    taskSlots: h.taskSlots,
    freeSlots: w.freeSlots,
    reservedSlots: h.reservedSlots,
    runningTasks: h.runningTasks,
    cpu: h.cpuPercent,
    memory: h.memoryPercent,
    errorRate: h.errorRate,
    rssBytes: h.processRssBytes,
    heartbeatAgeMs: w.heartbeatAgeMs,
  };
}

/**
 * taskRow: progress is done / total calls; the rate counts calls done since the task was accepted
 * (up to its end for a finished task, else up to `nowMs`); the ETA is what is left at that rate,
 * null while nothing is done or the task has ended.
 */
export function taskRow(t: TaskListEntry & { workerAddr: string }, nowMs: number): TaskRow {
  const s = t.snapshot;
  const total = s?.callsTotal ?? 0;
  const done = (s?.callsSucceeded ?? 0) + (s?.callsFailed ?? 0);
  const state = enumName(TaskState, s?.state, "TASK_STATE_");
  const running = s?.state === TaskState.RUNNING;
  const accepted = s?.acceptedAtMs ?? 0;
  const until = s && s.finishedAtMs > 0 ? s.finishedAtMs : nowMs;
  const elapsedS = accepted > 0 ? (until - accepted) / 1000 : 0;
  const rate = elapsedS > 0 && done > 0 ? done / elapsedS : null;
  return {
    taskId: s?.taskId ?? "",
    workerAddr: t.workerAddr,
    state,
    phase: enumName(TaskPhase, s?.phase, "TASK_PHASE_"),
    owner: t.owner,
    function: t.function,
    callsTotal: total,
    callsDone: done,
    callsFailed: s?.callsFailed ?? 0,
    callsRetried: s?.callsRetried ?? 0,
    progress: total > 0 ? Math.min(1, done / total) : state === "SUCCEEDED" ? 1 : 0,
    callsPerSecond: rate,
    etaSeconds: running && rate !== null ? Math.max(0, total - done) / rate : null,
    acceptedAtMs: accepted,
    finishedAtMs: s?.finishedAtMs ?? 0,
    error: s?.error?.message ?? "",
  };
}
