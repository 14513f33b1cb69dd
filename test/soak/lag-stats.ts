/** LagSample: how far the followed table was behind the chain's head (blocks) at `atMs`. */
export interface LagSample {
  readonly atMs: number;
  readonly lag: number;
}

/** Excursion: a stretch of samples beyond the limit, from the first over it to the first back within it (or the last sample). */
export interface Excursion {
  readonly fromMs: number;
  readonly toMs: number;
  readonly maxLag: number;
}

/** LagFigures: the lag over a stretch of samples, against a limit (the 2 blocks). */
export interface LagFigures {
  readonly samples: number;
  /** From the first sample to the last. */
  readonly spanMs: number;
  readonly max: number;
  readonly p50: number;
  readonly p99: number;
  readonly limit: number;
  /** Time beyond the limit: each sample's lag holds until the next sample. */
  readonly beyondMs: number;
  readonly excursions: Excursion[];
}

/** percentile: the nearest-rank q-quantile (0 < q <= 1) of the values; 0 when there are none. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/**
 * lagFigures sums up lag samples taken in time order: max, p50 and p99 over the samples (they are
 * taken at a steady period, so a sample stands for an equal slice of time), the time spent beyond
 * `limit` (a sample's lag held until the next sample, at most `maxHoldMs`: samples left out of a
 * stretch leave gaps no sample stands for) and each excursion beyond it.
 */
export function lagFigures(samples: readonly LagSample[], limit: number, maxHoldMs = Number.POSITIVE_INFINITY): LagFigures {
  const lags = samples.map((s) => s.lag);
  let beyondMs = 0;
  const excursions: Excursion[] = [];
  let open: { fromMs: number; maxLag: number } | null = null;
  samples.forEach((s, i) => {
    const next = samples[i + 1];
    if (s.lag > limit) {
      if (next) beyondMs += Math.min(maxHoldMs, next.atMs - s.atMs);
      open = open ? { ...open, maxLag: Math.max(open.maxLag, s.lag) } : { fromMs: s.atMs, maxLag: s.lag };
      if (!next) excursions.push({ ...open, toMs: s.atMs });
    } else if (open) {
      excursions.push({ ...(open as { fromMs: number; maxLag: number }), toMs: s.atMs });
      open = null;
    }
  });
  return {
    samples: samples.length,
    spanMs: samples.length > 0 ? samples[samples.length - 1]!.atMs - samples[0]!.atMs : 0,
    max: lags.length > 0 ? Math.max(...lags) : 0,
    p50: percentile(lags, 0.5),
    p99: percentile(lags, 0.99),
    limit,
    beyondMs,
    excursions,
  };
}

/** Happening: something the soak did over [fromMs, toMs] (a fault, a reorganisation), named for the report. */
export interface Happening {
  readonly fromMs: number;
  readonly toMs: number;
  readonly what: string;
}

/**
 * coinciding: the happenings that may explain an excursion: those that began before it ended and
 * ended at most `recoveryMs` before it began (a follower catches up some time after a fault heals).
 */
export function coinciding(e: Excursion, happenings: readonly Happening[], recoveryMs: number): Happening[] {
  return happenings.filter((h) => h.fromMs <= e.toMs && e.fromMs <= h.toMs + recoveryMs);
}
