import { mulberry32 } from "../support/mulberry32";

export const FAULT_KINDS = ["workerKill", "executorKill", "workerHang", "etcdRestart", "coordinatorRestart", "backendDegrade"] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** FaultEvent: one fault, what it does to whom, when (ms after the soak starts) and for how long. */
export interface FaultEvent {
  readonly atMs: number;
  readonly kind: FaultKind;
  /** Index of the Worker or Coordinator hit (0 for etcd and the backend). */
  readonly target: number;
  /** How long the target stays down, hung or degraded before it recovers. */
  readonly durationMs: number;
  /** backendDegrade only: injected latency per request and the share of requests that fail. */
  readonly latencyMs: number;
  readonly errorRate: number;
}

export interface ScheduleOptions {
  readonly seed: number;
  /** Faults start within [startMs, endMs); the last one recovers by endMs. */
  readonly startMs: number;
  readonly endMs: number;
  readonly workers: number;
  readonly coordinators: number;
  /** Mean quiet time between one fault's recovery and the next fault. */
  readonly meanGapMs: number;
}

/** Down/hang/degraded time per kind, [min, max) ms. */
const DURATION_MS: Record<FaultKind, readonly [number, number]> = {
  workerKill: [1_000, 5_000],
  executorKill: [0, 0],
  workerHang: [2_000, 8_000],
  etcdRestart: [1_000, 6_000],
  coordinatorRestart: [500, 4_000],
  backendDegrade: [4_000, 12_000],
};

/**
 * faultSchedule is the soak's fault plan, a pure function of its options: the same seed gives
 * the same faults at the same times against the same targets. Faults do not overlap (each
 * recovers before the next starts), so every failure is attributable. The first six are one of
 * each kind in a seeded order, with gaps capped so that they always fit: even a short soak sees
 * every kind. Throws when the window is too short for that.
 */
export function faultSchedule(o: ScheduleOptions): FaultEvent[] {
  const rnd = mulberry32(o.seed);
  const between = (lo: number, hi: number) => (hi <= lo ? lo : Math.floor(lo + rnd() * (hi - lo)));
  const firstRound = [...FAULT_KINDS];
  for (let i = firstRound.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [firstRound[i], firstRound[j]] = [firstRound[j]!, firstRound[i]!];
  }
  // The first round must fit whatever the draws: its gaps are capped to share the spare time.
  const firstRoundMaxMs = FAULT_KINDS.reduce((sum, k) => sum + DURATION_MS[k][1], 0);
  const spareMs = o.endMs - o.startMs - firstRoundMaxMs;
  if (spareMs <= 0) {
    throw new Error(`a fault window of ${o.endMs - o.startMs} ms is too short for one fault of each kind (needs more than ${firstRoundMaxMs} ms); give the soak more time`);
  }
  const firstRoundGapCapMs = Math.floor(spareMs / (firstRound.length + 1));
  const events: FaultEvent[] = [];
  let t = o.startMs;
  for (let i = 0; ; i++) {
    const kind = i < firstRound.length ? firstRound[i]! : FAULT_KINDS[Math.floor(rnd() * FAULT_KINDS.length)]!;
    const [lo, hi] = DURATION_MS[kind];
    const durationMs = between(lo, hi);
    const drawnGapMs = Math.round(-Math.log(1 - rnd()) * o.meanGapMs);
    const gapMs = i < firstRound.length ? Math.min(drawnGapMs, firstRoundGapCapMs) : drawnGapMs;
    const atMs = t + (i === 0 ? 0 : gapMs);
    const target = kind === "etcdRestart" || kind === "backendDegrade" ? 0 : Math.floor(rnd() * (kind === "coordinatorRestart" ? o.coordinators : o.workers));
    const degrade = kind === "backendDegrade";
    const event: FaultEvent = {
      atMs,
      kind,
      target,
      durationMs,
      latencyMs: degrade ? between(5, 60) : 0,
      errorRate: degrade ? Math.round(between(5, 35)) / 100 : 0,
    };
    if (atMs + durationMs >= o.endMs) return events;
    events.push(event);
    t = atMs + durationMs;
  }
}

/** countByKind: faults per kind, every kind listed (0 when absent). */
export function countByKind(events: readonly { kind: FaultKind }[]): Record<FaultKind, number> {
  const out = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  for (const e of events) out[e.kind]++;
  return out;
}
