import type { ReservationOutcome } from "./reservation-core-instructions";

/** Every outcome label once, in the order the dashboard lists them: a label added to ReservationOutcome and not here does not compile. */
const OUTCOME_ORDER: Record<ReservationOutcome, true> = {
  reserved: true,
  no_executable_slot: true,
  all_rejected: true,
  uncertain: true,
  unavailable: true,
  permission_denied: true,
  invalid_argument: true,
  cancelled: true,
};

/** Every outcome label, in the order the dashboard lists them (also the ones never seen). */
export const RESERVATION_OUTCOMES: readonly ReservationOutcome[] = Object.keys(OUTCOME_ORDER) as ReservationOutcome[];

/** Recent reservations a Coordinator keeps for GetReservationOutcomes (the oldest dropped first). */
export const RESERVATION_LOG_CAPACITY = 1_000;
/** Task ids and reasons are cut to this many characters: an invalid request may carry anything. */
const MAX_TEXT = 200;
const WINDOW_SECONDS = 60;

export interface ReservationRecord {
  readonly atMs: number;
  readonly taskId: string;
  readonly outcome: ReservationOutcome;
  /** The Worker that granted the slot, or the last one asked; "" when none was. */
  readonly workerAddr: string;
  readonly workersAsked: number;
  readonly durationMs: number;
  /** "" when reserved. */
  readonly reason: string;
}

export interface ReservationOutcomeCount {
  readonly outcome: ReservationOutcome;
  readonly sinceStart: number;
  readonly lastMinute: number;
}

export interface ReservationOutcomes {
  readonly startedAtMs: number;
  readonly total: number;
  readonly counts: readonly ReservationOutcomeCount[];
  /** Newest first. */
  readonly recent: readonly ReservationRecord[];
}

/**
 * ReservationOutcomeLog remembers how a Coordinator answered: a count per outcome since start, a
 * count per outcome over the last minute (60 one-second buckets, so its memory does not grow with
 * the rate), and the last `capacity` reservations in a ring. Pure: the adapter passes the time.
 */
export class ReservationOutcomeLog {
  private readonly sinceStart = new Map<ReservationOutcome, number>(RESERVATION_OUTCOMES.map((o) => [o, 0]));
  /** Per outcome: bucket i holds the count of second `seconds[i]`. */
  private readonly buckets = new Map<ReservationOutcome, { seconds: number[]; counts: number[] }>(
    RESERVATION_OUTCOMES.map((o) => [o, { seconds: new Array<number>(WINDOW_SECONDS).fill(-1), counts: new Array<number>(WINDOW_SECONDS).fill(0) }]),
  );
  private readonly ring: ReservationRecord[] = [];
  private next = 0;
  private total = 0;

  constructor(
    private readonly startedAtMs: number,
    private readonly capacity: number = RESERVATION_LOG_CAPACITY,
  ) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`capacity must be a positive integer, got ${capacity}`);
  }

  record(r: ReservationRecord): void {
    const kept: ReservationRecord = { ...r, taskId: cut(r.taskId), reason: cut(r.reason), workerAddr: cut(r.workerAddr) };
    if (this.ring.length < this.capacity) this.ring.push(kept);
    else this.ring[this.next] = kept;
    this.next = (this.next + 1) % this.capacity;
    this.total++;
    this.sinceStart.set(r.outcome, (this.sinceStart.get(r.outcome) ?? 0) + 1);
    const b = this.buckets.get(r.outcome)!;
    const second = Math.floor(r.atMs / 1000);
    const i = ((second % WINDOW_SECONDS) + WINDOW_SECONDS) % WINDOW_SECONDS;
    if (b.seconds[i] !== second) {
      b.seconds[i] = second;
      b.counts[i] = 0;
    }
    b.counts[i]!++;
  }

  /** snapshot: counts as of `nowMs` (the last minute is the 60 whole seconds up to and including now's) and the newest `limit` records. */
  snapshot(nowMs: number, limit: number): ReservationOutcomes {
    const nowSecond = Math.floor(nowMs / 1000);
    const counts = RESERVATION_OUTCOMES.map((outcome) => {
      const b = this.buckets.get(outcome)!;
      let lastMinute = 0;
      for (let i = 0; i < WINDOW_SECONDS; i++) {
        const s = b.seconds[i]!;
        if (s > nowSecond - WINDOW_SECONDS && s <= nowSecond) lastMinute += b.counts[i]!;
      }
      return { outcome, sinceStart: this.sinceStart.get(outcome) ?? 0, lastMinute };
    });
    const recent: ReservationRecord[] = [];
    const n = Math.min(Math.max(0, limit), this.ring.length);
    for (let k = 1; k <= n; k++) recent.push(this.ring[(this.next - k + this.ring.length * 2) % this.ring.length]!);
    return { startedAtMs: this.startedAtMs, total: this.total, counts, recent };
  }
}

function cut(s: string): string {
  return s.length <= MAX_TEXT ? s : `${s.slice(0, MAX_TEXT)}… (${s.length} characters)`;
}
