/**
 * ErrorRateWindow is the fraction of failed calls over the last `windowMs`, kept in one-second
 * buckets so that memory stays constant however many calls finish. The Worker counts only
 * system failures (executors dying, hanging, out of memory) as failed: a user's bug must not
 * steer Coordinators away from a healthy Worker.
 */
export class ErrorRateWindow {
  private readonly buckets: { second: number; ok: number; failed: number }[];

  constructor(private readonly windowMs = 60_000) {
    this.buckets = Array.from({ length: Math.max(1, Math.ceil(windowMs / 1000)) }, () => ({ second: -1, ok: 0, failed: 0 }));
  }

  record(failed: boolean, nowMs: number): void {
    const second = Math.floor(nowMs / 1000);
    const b = this.buckets[second % this.buckets.length]!;
    if (b.second !== second) {
      b.second = second;
      b.ok = 0;
      b.failed = 0;
    }
    if (failed) b.failed++;
    else b.ok++;
  }

  /** rate returns failed / all over the window, 0 when nothing finished. */
  rate(nowMs: number): number {
    const oldest = Math.floor((nowMs - this.windowMs) / 1000);
    let ok = 0;
    let failed = 0;
    for (const b of this.buckets) {
      if (b.second > oldest) {
        ok += b.ok;
        failed += b.failed;
      }
    }
    return ok + failed === 0 ? 0 : failed / (ok + failed);
  }
}
