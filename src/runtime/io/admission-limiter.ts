export interface AdmissionConfig {
  /** The limit a backend starts with. */
  readonly initialLimit: number;
  readonly minLimit: number;
  /** In-flight requests to one backend never exceed this. */
  readonly maxLimit: number;
  /** Requests that may wait for a slot; beyond it they are rejected at once (BackendOverloaded). */
  readonly queueSize: number;
}

/** What one finished backend request tells the limiter. */
export interface AdmissionSample {
  /** Time the backend took (not the wait for a slot). */
  readonly rttMs: number;
  /** The backend failed transiently (down, timed out, overloaded): back off at once. */
  readonly overloaded: boolean;
}

export type AdmissionDecision = "granted" | "queued" | "rejected";

// Gradient2 constants (Netflix concurrency-limits' defaults, windows shorter for a Worker's pace).
const RTT_TOLERANCE = 1.5;
const SMOOTHING = 0.2;
/** The long-term RTT average spans this many windows (about a minute at 100 ms windows). */
const LONG_WINDOW = 600;
const WARMUP_WINDOWS = 10;
/** Samples are pooled into windows of at least this long and this many samples; the limit moves once per window. */
export const ADMISSION_WINDOW_MS = 100;
const MIN_WINDOW_SAMPLES = 5;
/** On a transient error the limit is cut like AIMD's multiplicative decrease. */
const ERROR_BACKOFF = 0.8;

/**
 * AdmissionLimiter is one backend's adaptive concurrency limit, a Gradient2 limiter (Netflix
 * concurrency-limits) plus AIMD's multiplicative decrease on errors.
 *
 * Why Gradient2 and not plain AIMD: AIMD needs a latency threshold per backend (what is "slow"
 * for eth_getLogs over 10,000 blocks is fast for a cache-warm blockdb read) and only reacts
 * when the threshold or an error is hit. Gradient2 needs no threshold: it compares the latest
 * average round trip of the last window (>= 100 ms and >= 5 samples) with a long-term average
 * (exponential over 600 windows, about a minute) and shrinks the limit by their ratio when
 * latency rises (queueing somewhere behind the backend), never by more than half per window;
 * it grows by sqrt(limit) per window only while the ratio is healthy (Gradient2 always adds
 * its queue allowance, which keeps a small limit from ever shrinking), with 0.2 smoothing. Windows,
 * not single samples, keep the long average slow: per sample it would follow any latency
 * within seconds and the limit would drift to the max even while the backend queues. When
 * latency falls back the long average is pulled down quickly (x0.95 while it is over twice the
 * latest), so the limit recovers. Errors are not a latency signal: a window with a transient
 * failure cuts the limit by 0.8 (AIMD's decrease). While the backend is not the bottleneck (in
 * flight < limit / 2) the limit stays as it is, so an idle backend's limit does not drift.
 *
 * Admission: below the limit a request is granted; otherwise it waits in a FIFO queue of at
 * most `queueSize`, and beyond that it is rejected at once; the caller answers it with a
 * retryable BackendOverloaded so the call is retried later instead of piling up in memory.
 * Pure: time comes in with each release, no IO; waiters are opaque.
 */
export class AdmissionLimiter<W> {
  private estimated: number;
  private longRtt = 0;
  private windows = 0;
  private windowStartMs = NaN;
  private windowSamples = 0;
  private windowRttSum = 0;
  private windowMaxInflight = 0;
  private windowOverloaded = false;
  private active = 0;
  private peak = 0;
  private readonly queue: W[] = [];
  private head = 0;
  rejected = 0;

  constructor(readonly config: AdmissionConfig) {
    const { initialLimit, minLimit, maxLimit, queueSize } = config;
    if (!(minLimit >= 1 && minLimit <= initialLimit && initialLimit <= maxLimit) || !(queueSize >= 0)) {
      throw new RangeError(`AdmissionLimiter: need 1 <= minLimit <= initialLimit <= maxLimit and queueSize >= 0, got ${JSON.stringify(config)}`);
    }
    this.estimated = initialLimit;
  }

  /** The current limit (whole requests). */
  get limit(): number {
    return Math.floor(this.estimated);
  }

  get inflight(): number {
    return this.active;
  }

  /** The most requests ever in flight at once. */
  get peakInflight(): number {
    return this.peak;
  }

  get queued(): number {
    return this.queue.length - this.head;
  }

  acquire(waiter: W): AdmissionDecision {
    if (this.active < this.limit && this.queued === 0) {
      this.take();
      return "granted";
    }
    if (this.queued < this.config.queueSize) {
      this.queue.push(waiter);
      return "queued";
    }
    this.rejected++;
    return "rejected";
  }

  /**
   * release frees a slot, learns from the request's sample (none when it never reached the
   * backend) and returns the queued waiters that now hold slots, oldest first.
   */
  release(sample: AdmissionSample | null, nowMs: number): W[] {
    if (this.active === 0) throw new Error("AdmissionLimiter: release without acquire");
    const inflightAtEnd = this.active;
    this.active--;
    if (sample) this.record(sample, inflightAtEnd, nowMs);
    const granted: W[] = [];
    while (this.queued > 0 && this.active < this.limit) {
      granted.push(this.queue[this.head]!);
      this.queue[this.head++] = undefined as W;
      this.take();
    }
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    return granted;
  }

  private take(): void {
    this.active++;
    if (this.active > this.peak) this.peak = this.active;
  }

  private record(s: AdmissionSample, inflight: number, nowMs: number): void {
    if (Number.isNaN(this.windowStartMs)) this.windowStartMs = nowMs;
    this.windowSamples++;
    this.windowRttSum += Math.max(s.rttMs, 0.001);
    this.windowMaxInflight = Math.max(this.windowMaxInflight, inflight);
    this.windowOverloaded ||= s.overloaded;
    if (nowMs - this.windowStartMs < ADMISSION_WINDOW_MS || this.windowSamples < MIN_WINDOW_SAMPLES) return;
    const rtt = this.windowRttSum / this.windowSamples;
    const overloaded = this.windowOverloaded;
    const maxInflight = this.windowMaxInflight;
    this.windowStartMs = nowMs;
    this.windowSamples = 0;
    this.windowRttSum = 0;
    this.windowMaxInflight = 0;
    this.windowOverloaded = false;
    this.learn(rtt, overloaded, maxInflight);
  }

  private learn(rtt: number, overloaded: boolean, inflight: number): void {
    const { minLimit, maxLimit } = this.config;
    if (overloaded) {
      this.estimated = Math.max(minLimit, this.estimated * ERROR_BACKOFF);
      return;
    }
    this.windows++;
    // The long-term average: a plain mean while warming up, then exponential over LONG_WINDOW windows.
    if (this.windows <= WARMUP_WINDOWS) this.longRtt += (rtt - this.longRtt) / this.windows;
    else this.longRtt += (rtt - this.longRtt) * (2 / (LONG_WINDOW + 1));
    // Latency is back to normal after a long slow spell: catch up faster than the average would.
    if (this.longRtt / rtt > 2) this.longRtt *= 0.95;
    if (inflight < this.estimated / 2) return; // not the bottleneck: no evidence either way
    const gradient = Math.max(0.5, Math.min(1, (RTT_TOLERANCE * this.longRtt) / rtt));
    // Grow (by sqrt(limit), Gradient's queue allowance) only while latency is healthy; while it
    // is up, shrink by the gradient alone, or a small limit would never come down.
    const target = gradient < 1 ? this.estimated * gradient : this.estimated + Math.sqrt(this.estimated);
    this.estimated = Math.max(minLimit, Math.min(maxLimit, this.estimated * (1 - SMOOTHING) + target * SMOOTHING));
  }
}
