/** Progress: where a task stands, from its snapshots (calls done = succeeded + failed). */
export interface Progress {
  readonly done: number;
  readonly total: number;
  readonly failed: number;
  /** Calls per second over the recent window; 0 until two samples exist. */
  readonly ratePerS: number;
  /** Estimated ms to completion; undefined while the rate is unknown. */
  readonly etaMs: number | undefined;
  /** done / total in 0..1 (0 while the total is not known yet). */
  readonly fraction: number;
}

/**
 * ProgressMeter turns call counts seen at `nowMs` into rate and ETA over a sliding window,
 * so a task that slows down shows it within a few seconds. Pure: time comes in.
 */
export class ProgressMeter {
  private readonly samples: { atMs: number; done: number }[] = [];

  constructor(private readonly windowMs = 5000) {}

  update(counts: { callsTotal: number; callsSucceeded: number; callsFailed: number }, nowMs: number): Progress {
    const done = counts.callsSucceeded + counts.callsFailed;
    const total = counts.callsTotal;
    this.samples.push({ atMs: nowMs, done });
    while (this.samples.length > 2 && this.samples[0]!.atMs < nowMs - this.windowMs) this.samples.shift();
    const first = this.samples[0]!;
    const spanMs = nowMs - first.atMs;
    const ratePerS = spanMs > 0 ? ((done - first.done) * 1000) / spanMs : 0;
    const remaining = Math.max(0, total - done);
    const etaMs = remaining === 0 ? 0 : ratePerS > 0 ? (remaining / ratePerS) * 1000 : undefined;
    return { done, total, failed: counts.callsFailed, ratePerS, etaMs, fraction: total > 0 ? Math.min(1, done / total) : 0 };
  }
}
