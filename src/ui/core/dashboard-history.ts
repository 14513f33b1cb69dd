/**
 * DashboardHistory keeps what the dashboard draws over time, from what the Workers already export:
 * each task's counts from ListTasks (calls done, and the calls timed in the pool with their summed
 * seconds) and each Worker's busy executors from its etcd heartbeat. It is fed samples with their
 * times and answers chart points; it reads no clock and does no IO (the UI server samples).
 *
 * A task's points are placed at the Worker's `updatedAtMs` (when its counts last changed, the
 * Worker's clock), so rates never mix two machines' clocks; a task's life starts at its
 * `acceptedAtMs` with nothing done, so its first rate covers the time before the dashboard first
 * saw it. A Worker's points are placed at its heartbeat's `lastHeartbeatMs`.
 */

/** A point of a chart: [ms since the epoch, value]. */
export type Point = readonly [number, number];

/** One task as a sample gives it. */
export interface TaskSample {
  readonly workerAddr: string;
  readonly taskId: string;
  readonly acceptedAtMs: number;
  /** When the Worker last changed the task's counts (its clock); 0: unknown. */
  readonly updatedAtMs: number;
  readonly finishedAtMs: number;
  /** Calls that ended for good (succeeded or failed). */
  readonly callsDone: number;
  /** Calls (every attempt) that ended in the pool, and the seconds they took there, summed. */
  readonly callsTimed: number;
  readonly callSeconds: number;
}

/** One Worker as its heartbeat gives it. */
export interface WorkerSample {
  readonly addr: string;
  readonly heartbeatAtMs: number;
  readonly busy: number;
  readonly total: number;
}

export interface HistoryLimits {
  /** Samples kept per task; past it, every other one is dropped (counts are cumulative, so rates stay right). */
  readonly pointsPerTask: number;
  /** Tasks followed at most; the one seen longest ago goes first. */
  readonly tasks: number;
  /** How far back each Worker's busy executors are kept. */
  readonly workerWindowMs: number;
  /** A task not seen for this long is forgotten. */
  readonly forgetTaskAfterMs: number;
}

export const DEFAULT_HISTORY_LIMITS: HistoryLimits = { pointsPerTask: 240, tasks: 500, workerWindowMs: 10 * 60_000, forgetTaskAfterMs: 30 * 60_000 };

interface Counts {
  readonly atMs: number;
  readonly done: number;
  readonly timed: number;
  readonly seconds: number;
}

interface TaskTrack {
  readonly samples: Counts[];
  lastSeenMs: number;
}

export interface TaskCharts {
  /** Calls done per second between consecutive samples, at each interval's end. */
  readonly rate: readonly Point[];
  /** Mean call latency (ms, the pool taking a call to its outcome) of the calls that ended between consecutive samples, at each interval's end. */
  readonly latencyMs: readonly Point[];
}

export class DashboardHistory {
  private readonly tasks = new Map<string, TaskTrack>();
  private readonly workers = new Map<string, { atMs: number; busy: number; total: number }[]>();

  constructor(private readonly limits: HistoryLimits = DEFAULT_HISTORY_LIMITS) {}

  /** observeTasks records each task's counts as of its `updatedAtMs` (a sample already recorded is not again). */
  observeTasks(samples: readonly TaskSample[], nowMs: number): void {
    for (const s of samples) {
      const key = taskKey(s.workerAddr, s.taskId);
      let track = this.tasks.get(key);
      if (track === undefined) {
        if (s.acceptedAtMs <= 0) continue; // not started: nothing to draw yet
        track = { samples: [{ atMs: s.acceptedAtMs, done: 0, timed: 0, seconds: 0 }], lastSeenMs: nowMs };
        this.tasks.set(key, track);
        this.maybeEvictTask();
      }
      this.tasks.delete(key); // re-inserted last: the map's order is the order tasks were last seen in
      this.tasks.set(key, track);
      track.lastSeenMs = nowMs;
      const atMs = s.updatedAtMs > 0 ? s.updatedAtMs : s.finishedAtMs > 0 ? s.finishedAtMs : nowMs;
      const last = track.samples[track.samples.length - 1]!;
      if (atMs < last.atMs) continue;
      const next = { atMs, done: s.callsDone, timed: s.callsTimed, seconds: s.callSeconds };
      if (atMs === last.atMs) {
        // The same update seen again; the pool's sums may have moved meanwhile (calls timed before
        // the Worker reported its counts): keep the later sums.
        if (next.timed !== last.timed && track.samples.length > 1) track.samples[track.samples.length - 1] = next;
        continue;
      }
      track.samples.push(next);
      if (track.samples.length > this.limits.pointsPerTask) thin(track.samples);
    }
    for (const [key, t] of this.tasks) if (nowMs - t.lastSeenMs > this.limits.forgetTaskAfterMs) this.tasks.delete(key);
  }

  /** observeWorkers records each Worker's busy executors as of its heartbeat (once per heartbeat), and forgets points older than the window. */
  observeWorkers(samples: readonly WorkerSample[], nowMs: number): void {
    for (const s of samples) {
      let points = this.workers.get(s.addr);
      if (points === undefined) {
        points = [];
        this.workers.set(s.addr, points);
      }
      const last = points[points.length - 1];
      if (last === undefined || s.heartbeatAtMs > last.atMs) points.push({ atMs: s.heartbeatAtMs, busy: s.busy, total: s.total });
    }
    for (const [addr, points] of this.workers) {
      while (points.length > 0 && points[0]!.atMs < nowMs - this.limits.workerWindowMs) points.shift();
      if (points.length === 0) this.workers.delete(addr);
    }
  }

  /** taskCharts: the task's calls per second and mean call latency over its life, as far as seen. */
  taskCharts(workerAddr: string, taskId: string): TaskCharts {
    const samples = this.tasks.get(taskKey(workerAddr, taskId))?.samples ?? [];
    const rate: Point[] = [];
    const latencyMs: Point[] = [];
    for (let i = 1; i < samples.length; i++) {
      const a = samples[i - 1]!;
      const b = samples[i]!;
      const seconds = (b.atMs - a.atMs) / 1000;
      if (seconds > 0) rate.push([b.atMs, Math.max(0, b.done - a.done) / seconds]);
      if (b.timed > a.timed) latencyMs.push([b.atMs, ((b.seconds - a.seconds) / (b.timed - a.timed)) * 1000]);
    }
    return { rate, latencyMs };
  }

  /** workerBusy: the Worker's busy executors (and pool size) at each heartbeat within the window. */
  workerBusy(addr: string): { readonly busy: readonly Point[]; readonly total: number } {
    const points = this.workers.get(addr) ?? [];
    return { busy: points.map((p) => [p.atMs, p.busy] as const), total: points[points.length - 1]?.total ?? 0 };
  }

  /** taskCount: tasks followed now (for tests and bounds). */
  get taskCount(): number {
    return this.tasks.size;
  }

  private maybeEvictTask(): void {
    while (this.tasks.size > this.limits.tasks) this.tasks.delete(this.tasks.keys().next().value!);
  }
}

function taskKey(workerAddr: string, taskId: string): string {
  return `${workerAddr} ${taskId}`;
}

/** thin drops every other sample but the first and the last: the life stays covered at half the resolution. */
function thin(samples: Counts[]): void {
  const kept = samples.filter((_, i) => i === 0 || i === samples.length - 1 || i % 2 === 0);
  samples.splice(0, samples.length, ...kept);
}
