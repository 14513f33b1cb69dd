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
