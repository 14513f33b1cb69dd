import { TaskPhase, TaskState, type TaskListEntry } from "../../gen/worker/v1/worker";
import type { CoordinatorOutcomes } from "../../sdk/blockx-client";
import type { RegisteredWorker } from "../../sdk/worker-registry";
import type { FollowerStatus } from "../../follow/core/follower-status";
import type { Point, TaskSample, WorkerSample } from "./dashboard-history";

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
  /** When the Worker put its heartbeat (its clock, ms since the epoch). */
  readonly heartbeatAtMs: number;
  /** From the heartbeat; null for a Worker that does not send it. */
  readonly executors: { total: number; ready: number; busy: number; queuedCalls: number; restarts: number } | null;
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
  /** When the Worker last changed the task's snapshot (its clock). */
  readonly updatedAtMs: number;
  /** Calls (every attempt) ended in the Worker's pool and the seconds they took there (ListTasks). */
  readonly callsTimed: number;
  readonly callSeconds: number;
  readonly error: string;
}

/** CoordinatorRow: how one Coordinator answered reservations (GetReservationOutcomes), or why it did not say. */
export interface CoordinatorRow {
  readonly cluster: string;
  readonly addr: string;
  /** "" when it answered. */
  readonly error: string;
  readonly startedAtMs: number;
  readonly total: number;
  /** Share of the last minute's reservations that were granted; null when there were none. */
  readonly grantedLastMinute: number | null;
  readonly counts: readonly { outcome: string; sinceStart: number; lastMinute: number }[];
  readonly recent: readonly { atMs: number; taskId: string; outcome: string; workerAddr: string; workersAsked: number; durationMs: number; reason: string }[];
}

export interface Overview {
  readonly atMs: number;
  readonly workers: readonly WorkerRow[];
  /** The statuses running followers (`blockx follow`) publish in etcd, by table and chain, as published. */
  readonly followers: readonly FollowerStatus[];
  /** Keys under /blockx/followers/ whose value is not a follower status (left out, not trusted). */
  readonly followersSkipped: readonly string[];
  readonly tasks: readonly TaskRow[];
  readonly coordinators: readonly CoordinatorRow[];
  /** Workers registered in etcd that did not answer ListTasks. */
  readonly unreachable: readonly { addr: string; message: string }[];
  /** Each Worker's busy executors at its heartbeats over the last minutes, by address, with its pool's size. */
  readonly busyExecutors: Readonly<Record<string, { readonly busy: readonly Point[]; readonly total: number }>>;
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
    heartbeatAtMs: h.lastHeartbeatMs,
    executors: h.executors ?? null,
  };
}

export function coordinatorRow(c: CoordinatorOutcomes): CoordinatorRow {
  if (c.error !== undefined) return { cluster: c.cluster, addr: c.addr, error: c.error, startedAtMs: 0, total: 0, grantedLastMinute: null, counts: [], recent: [] };
  const o = c.outcomes;
  const minute = o.counts.reduce((n, k) => n + k.lastMinute, 0);
  const granted = o.counts.find((k) => k.outcome === "reserved")?.lastMinute ?? 0;
  return {
    cluster: c.cluster,
    addr: c.addr,
    error: "",
    startedAtMs: o.startedAtMs,
    total: o.total,
    grantedLastMinute: minute > 0 ? granted / minute : null,
    counts: o.counts.map((k) => ({ outcome: k.outcome, sinceStart: k.sinceStart, lastMinute: k.lastMinute })),
    recent: o.recent.map((r) => ({ atMs: r.atMs, taskId: r.taskId, outcome: r.outcome, workerAddr: r.workerAddr, workersAsked: r.workersAsked, durationMs: r.durationMs, reason: r.reason })),
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
    updatedAtMs: s?.updatedAtMs ?? 0,
    callsTimed: t.callsTimed,
    callSeconds: t.callSeconds,
    error: s?.error?.message ?? "",
  };
}

/** taskSample: what DashboardHistory keeps of a task row. */
export function taskSample(t: TaskRow): TaskSample {
  return { workerAddr: t.workerAddr, taskId: t.taskId, acceptedAtMs: t.acceptedAtMs, updatedAtMs: t.updatedAtMs, finishedAtMs: t.finishedAtMs, callsDone: t.callsDone, callsTimed: t.callsTimed, callSeconds: t.callSeconds };
}

/** workerSample: what DashboardHistory keeps of a Worker row (nothing for a Worker whose heartbeat carries no executors). */
export function workerSample(w: WorkerRow): WorkerSample | null {
  return w.executors === null ? null : { addr: w.addr, heartbeatAtMs: w.heartbeatAtMs, busy: w.executors.busy, total: w.executors.total };
}
