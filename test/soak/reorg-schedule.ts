import { mulberry32 } from "../support/mulberry32";

/**
 * ReorgEvent: one reorganisation of the soak's anvil chain (`make soak REORGS=1`), at `atMs` after
 * the faults start: `reorg` replaces the last `depth` blocks with new ones at the same heights
 * (anvil_reorg), `rollback` drops them (anvil_rollback; the chain grows again at the next mined block).
 */
export interface ReorgEvent {
  readonly atMs: number;
  readonly kind: "reorg" | "rollback";
  readonly depth: number;
}

export interface ReorgScheduleOptions {
  readonly seed: number;
  /** Reorganisations happen within [startMs, endMs). */
  readonly startMs: number;
  readonly endMs: number;
  /** Mean time between two reorganisations (exponential gaps, at least minGapMs). */
  readonly meanGapMs: number;
  /** Gaps are at least this long, so that one reorganisation is over before the next. */
  readonly minGapMs?: number;
  /** Depths are 1..maxDepth, uniform. */
  readonly maxDepth: number;
  /** The share of events that are rollbacks rather than reorgs. */
  readonly rollbackShare: number;
}

/**
 * reorgSchedule is the soak's plan of reorganisations, a pure function of its options (same seed,
 * same plan): exponential gaps of mean meanGapMs (a Poisson process, so two may come close and a
 * minute may have none), depths 1..maxDepth, a share of rollbacks. Drawn from its own stream of the
 * seed, so adding reorganisations does not change the seed's fault schedule.
 */
export function reorgSchedule(o: ReorgScheduleOptions): ReorgEvent[] {
  const rnd = mulberry32((o.seed ^ 0x5eed0e0f) >>> 0);
  const minGap = o.minGapMs ?? 1_000;
  const out: ReorgEvent[] = [];
  let t = o.startMs;
  for (;;) {
    t += Math.max(minGap, Math.round(-Math.log(1 - rnd()) * o.meanGapMs));
    if (t >= o.endMs) return out;
    const kind = rnd() < o.rollbackShare ? "rollback" : "reorg";
    const depth = 1 + Math.floor(rnd() * o.maxDepth);
    out.push({ atMs: t, kind, depth });
  }
}
