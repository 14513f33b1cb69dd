/**
 * Interleaved rounds: the machine is shared and noisy, so a benchmark runs one measurement of each
 * series per round, rotating the order every round (no series always runs first or right after a
 * heavy one), and reports medians over the rounds. Two runs then agree far better than
 * back-to-back blocks of one series each.
 */

/** median of a non-empty list (the mean of the two middle values for an even count). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new Error("median of nothing");
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** interleavedRounds runs `measure` of every series once per round, order rotated per round; returns each series' results. */
export async function interleavedRounds<K extends string, R>(keys: readonly K[], rounds: number, measure: (key: K) => Promise<R>, onRound?: (round: number) => void): Promise<Record<K, R[]>> {
  const out = Object.fromEntries(keys.map((k) => [k, [] as R[]])) as Record<K, R[]>;
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < keys.length; i++) {
      const k = keys[(i + r) % keys.length]!;
      out[k].push(await measure(k));
    }
    onRound?.(r + 1);
  }
  return out;
}

/**
 * HOST_INTERFERENCE_SPREAD: how far the CPU per unit of one series may range over a run's rounds
 * before the run is called disturbed. The same code over the same data costs the same CPU in every
 * round of a quiet run (a backfill's floor and series 1.08x and 1.09x, 2026-12-04 12:10); when the
 * host is busy with other work (this VM reports no steal time), the CPU charged for the same work
 * grows: one backfill's floor ranged 0.285-0.486 ms per block over its five rounds (1.70x).
 * No estimator within a run recovers from a stretch that long, so the bench says so instead of
 * printing figures that look like a result.
 */
export const HOST_INTERFERENCE_SPREAD = 1.25;

/**
 * interferenceNote: a line naming the series whose CPU per unit ranged over more than
 * HOST_INTERFERENCE_SPREAD across the rounds (null when none did).
 */
export function interferenceNote(cpuPerUnitBySeries: Readonly<Record<string, readonly number[]>>, unit: string): string | null {
  const spread = Object.entries(cpuPerUnitBySeries)
    .map(([name, xs]) => ({ name, lo: Math.min(...xs), hi: Math.max(...xs) }))
    .filter((s) => s.lo > 0 && s.hi / s.lo > HOST_INTERFERENCE_SPREAD);
  if (spread.length === 0) return null;
  const what = spread.map((s) => `${s.name} ${s.lo.toFixed(3)}-${s.hi.toFixed(3)} (${(s.hi / s.lo).toFixed(2)}x)`).join(", ");
  return `**the host disturbed this run**: the same work cost a different CPU per ${unit} from round to round (${what}; a quiet run stays within ${HOST_INTERFERENCE_SPREAD}x). Its ratios do not compare with a quiet run's: run it again.`;
}
