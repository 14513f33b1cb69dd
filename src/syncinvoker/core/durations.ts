/** Durations of one invocation, as answered (syncinvoker.v1.Durations). */
export interface InvokeDurations {
  readonly queueMs: number;
  readonly cpuMs: number;
  readonly ioMs: number;
  readonly totalMs: number;
}

/**
 * attributeDurations splits an invocation's wall-clock time (`totalMs`, from the request's
 * arrival to its answer) into waiting for an executor (`queueMs`: the admission queue plus
 * the pool's own), executor CPU and IO-backend time. CPU time is measured by the executor's
 * clock, the rest by ours; the two clocks disagree by a few microseconds, so the parts are
 * clamped into the whole (queue first, then IO, then CPU) and the answer always satisfies
 * `queueMs <= totalMs` and `cpuMs + ioMs <= totalMs` (also `queue + cpu + io <= total`).
 */
export function attributeDurations(m: { queueMs: number; cpuMs: number; ioMs: number; totalMs: number }): InvokeDurations {
  const nonNegative = (x: number) => (Number.isFinite(x) && x > 0 ? x : 0);
  const totalMs = nonNegative(m.totalMs);
  const queueMs = Math.min(nonNegative(m.queueMs), totalMs);
  const ioMs = Math.min(nonNegative(m.ioMs), totalMs - queueMs);
  let cpuMs = Math.min(nonNegative(m.cpuMs), totalMs - queueMs - ioMs);
  // Floating-point subtraction can leave cpu + io one ulp above total: step cpu down until it fits.
  while (cpuMs > 0 && cpuMs + ioMs > totalMs) cpuMs = Math.max(0, cpuMs - Math.max(Number.MIN_VALUE, cpuMs * Number.EPSILON));
  return { queueMs, cpuMs, ioMs, totalMs };
}
