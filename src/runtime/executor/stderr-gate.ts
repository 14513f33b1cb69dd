/** What an executor may write to the log per second, and how long one line may be. */
export const STDERR_LINES_PER_SECOND = 20;
export const STDERR_MAX_LINE_CHARS = 2048;

/**
 * StderrGate decides which of an executor's stderr lines reach the Worker's log: at most
 * `perSecond` in each second; the rest are counted, and the count is told once, with the first
 * line let through after them (user code can print to stderr at any rate: logging each line at
 * WARN would let one function flood the log and the Worker's CPU). Pure: the caller gives the time.
 */
export class StderrGate {
  private second = -1;
  private passed = 0;
  private droppedSinceTold = 0;
  /** Every line dropped so far (a metric). */
  droppedTotal = 0;

  constructor(private readonly perSecond = STDERR_LINES_PER_SECOND) {}

  /** admit says whether the line at `nowMs` is logged, and how many were dropped before it unsaid. */
  admit(nowMs: number): { log: boolean; droppedBefore: number } {
    const second = Math.floor(nowMs / 1000);
    if (second !== this.second) {
      this.second = second;
      this.passed = 0;
    }
    if (this.passed >= this.perSecond) {
      this.droppedSinceTold++;
      this.droppedTotal++;
      return { log: false, droppedBefore: 0 };
    }
    this.passed++;
    const droppedBefore = this.droppedSinceTold;
    this.droppedSinceTold = 0;
    return { log: true, droppedBefore };
  }

  /** untold: lines dropped since the last one logged (said when the executor exits). */
  untold(): number {
    const n = this.droppedSinceTold;
    this.droppedSinceTold = 0;
    return n;
  }
}
