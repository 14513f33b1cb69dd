import { mulberry32 } from "../support/mulberry32";

/**
 * The soak's fault kinds. The first six are process and backend faults on loopback; the rest are
 * gray faults between hosts (every Worker reaches its clients, etcd and Postgres through TCP fault
 * relays, test/support/fault-relay.ts) and faults that cross the cluster's thresholds: a Worker cut
 * off from etcd past its lease (it still reaches the store), cut off from its clients past their
 * lost-after time, its store connection silent or severed, a SubmitTask or SubmitTasks answer lost
 * after the Worker accepted, a pause past the lease, one past the store's statement timeout, one
 * past the SDK's patience but within the lease (the client reruns the task elsewhere; the paused run
 * comes back still holding its lease, and its late commits must be refused: issue 48's case 2),
 * and two faults at once.
 */
export const FAULT_KINDS = [
  "workerKill",
  "executorKill",
  "workerHang",
  "etcdRestart",
  "coordinatorRestart",
  "backendDegrade",
  "etcdPartition",
  "clientPartition",
  "storeSilent",
  "storeSevered",
  "submitAnswerLost",
  "submitTasksAnswerLost",
  "pauseLease",
  "pauseStatement",
  "pausePastPatience",
  "twoAtOnce",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The kinds two at once draws from: each recovers on its own, and none needs the soak's other lanes quiet. */
export const PAIRABLE_KINDS: readonly FaultKind[] = ["workerKill", "executorKill", "workerHang", "etcdPartition", "clientPartition", "storeSilent", "pauseLease", "submitAnswerLost"];

/** Kinds that hit one Worker (its process, its executors, its links); the schedule draws which. */
const PER_WORKER: ReadonlySet<FaultKind> = new Set(["workerKill", "executorKill", "workerHang", "etcdPartition", "clientPartition", "storeSilent", "storeSevered", "pauseLease", "pauseStatement", "pausePastPatience"]);

/**
 * kindsFor: the kinds a store can meet. SQLite is a file on the Workers' own host: there is no
 * connection to sever (storeSilent is its write lock held by another process instead).
 */
/** SoakStoreKind: the soak's table stores; sqlite and parquet are files on the Workers' one host, postgres a server every Worker reaches over the network. */
export type SoakStoreKind = "sqlite" | "postgres" | "parquet";

/** onHost: a store of files on the Workers' host (no connection to sever; a silent store is a held lock). */
export const onHost = (store: SoakStoreKind): boolean => store !== "postgres";

export function kindsFor(store: SoakStoreKind): readonly FaultKind[] {
  return onHost(store) ? FAULT_KINDS.filter((k) => k !== "storeSevered") : FAULT_KINDS;
}

/** FaultEvent: one fault, what it does to whom, when (ms after the soak starts) and for how long. */
export interface FaultEvent {
  readonly atMs: number;
  readonly kind: FaultKind;
  /** Index of the Worker or Coordinator hit (0 for etcd, the backend, the submit answers and a pair). */
  readonly target: number;
  /** How long the target stays down, hung, cut off or degraded before it recovers (a lost answer: how long the relay waits for one). */
  readonly durationMs: number;
  /** backendDegrade only: injected latency per request and the share of requests that fail. */
  readonly latencyMs: number;
  readonly errorRate: number;
  /** twoAtOnce only: the two faults, starting together (the event lasts as long as the longer). */
  readonly pair?: readonly [FaultEvent, FaultEvent];
}

/**
 * Thresholds: the cluster's own timeouts that the threshold faults cross. `leaseMs`: a Worker's
 * lease (etcd registration and table-store epoch, HEARTBEAT_LEASE_TTL_S); `lostAfterMs`: when the
 * SDK gives up on a silent Worker (BLOCKX_WORKER_LOST_AFTER_MS); `statementMs`: the store's
 * statement timeout (TABLE_STORE_STATEMENT_TIMEOUT_MS); `deadlineMs`: when the Worker gives up on
 * a silent store call (that + TABLE_STORE_DEADLINE_MARGIN_MS).
 */
export interface Thresholds {
  readonly leaseMs: number;
  readonly lostAfterMs: number;
  readonly statementMs: number;
  readonly deadlineMs: number;
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
  readonly thresholds: Thresholds;
  /** The table store (default postgres): its kinds (kindsFor) and how long a silent store lasts. */
  readonly store?: SoakStoreKind;
}

/**
 * durationRange: down/hang/cut-off/degraded time per kind, [min, max) ms. A threshold fault lasts
 * past its threshold by a margin that absorbs a loaded machine's late timers: a pause (or a cut
 * from etcd) past the lease outlasts it by 0.5-1.5 s; a pause past the statement timeout stays
 * under the lease (it crosses the one, not the other); a pause past the SDK's patience outlasts it
 * by 2.5 s (the client has given the run up and its new run is under way when the paused one
 * resumes) and stays under two thirds of the lease (renewed every third: the paused run's lease is
 * surely still live). A silent Postgres outlasts the Worker's deadline for a silent
 * call by more than a lease renewal's interval (so a call is surely caught in it and given up on);
 * a held SQLite lock outlasts the busy timeout but not the lease (past it, every Worker's epoch
 * would end: that is the pause's kind).
 */
export function durationRange(kind: FaultKind, t: Thresholds, store: SoakStoreKind = "postgres"): readonly [number, number] {
  switch (kind) {
    case "workerKill":
      return [1_000, 5_000];
    case "executorKill":
      return [0, 0];
    case "workerHang":
      return [2_000, 8_000];
    case "etcdRestart":
      return [1_000, 6_000];
    case "coordinatorRestart":
      return [500, 4_000];
    case "backendDegrade":
      return [4_000, 12_000];
    case "etcdPartition":
      return [t.leaseMs + 500, t.leaseMs + 1_500];
    case "clientPartition":
      return [t.lostAfterMs + 1_000, t.lostAfterMs + 3_000];
    case "storeSilent":
      return onHost(store) ? [t.statementMs + 500, Math.max(t.statementMs + 501, t.leaseMs - 500)] : [t.deadlineMs + Math.ceil(t.leaseMs / 3) + 200, t.deadlineMs + Math.ceil(t.leaseMs / 3) + 1_500];
    case "storeSevered":
      return [500, 3_000];
    case "submitAnswerLost":
    case "submitTasksAnswerLost":
      return [6_000, 6_000]; // how long the relays wait for such a submit; the fault ends as soon as one was lost
    case "pauseLease":
      return [t.leaseMs + 500, t.leaseMs + 1_500];
    case "pauseStatement":
      return [t.statementMs + 300, Math.max(t.statementMs + 301, Math.min(t.leaseMs - 300, t.statementMs + 1_500))];
    case "pausePastPatience":
      return [t.lostAfterMs + 2_500, Math.max(t.lostAfterMs + 2_501, Math.floor((t.leaseMs * 2) / 3) - 300)];
    case "twoAtOnce":
      return [0, Math.max(...PAIRABLE_KINDS.map((k) => durationRange(k, t, store)[1]))];
  }
}

/**
 * faultSchedule is the soak's fault plan, a pure function of its options: the same seed gives
 * the same faults at the same times against the same targets. Faults do not overlap (each
 * recovers before the next starts), so every failure is attributable, but for twoAtOnce, whose
 * pair starts together on purpose. The first round is one of each kind in a seeded order, with
 * gaps capped so that it always fits: even a short soak sees every kind. Throws when the window is
 * too short for that.
 */
export function faultSchedule(o: ScheduleOptions): FaultEvent[] {
  const store = o.store ?? "postgres";
  const kinds = kindsFor(store);
  const rnd = mulberry32(o.seed);
  const between = (lo: number, hi: number) => (hi <= lo ? lo : Math.floor(lo + rnd() * (hi - lo)));
  const firstRound = [...kinds];
  for (let i = firstRound.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [firstRound[i], firstRound[j]] = [firstRound[j]!, firstRound[i]!];
  }
  // The first round must fit whatever the draws: its gaps are capped to share the spare time.
  const firstRoundMaxMs = firstRoundMs(o.thresholds, store);
  const spareMs = o.endMs - o.startMs - firstRoundMaxMs;
  if (spareMs <= 0) {
    throw new Error(`a fault window of ${o.endMs - o.startMs} ms is too short for one fault of each kind (needs more than ${firstRoundMaxMs} ms); give the soak more time`);
  }
  const firstRoundGapCapMs = Math.floor(spareMs / (firstRound.length + 1));
  const pairable = PAIRABLE_KINDS.filter((k) => kinds.includes(k));
  const one = (kind: FaultKind, atMs: number): FaultEvent => {
    const [lo, hi] = durationRange(kind, o.thresholds, store);
    if (kind === "twoAtOnce") {
      const a = pairable[Math.floor(rnd() * pairable.length)]!;
      const others = pairable.filter((k) => k !== a);
      const b = others[Math.floor(rnd() * others.length)]!;
      const pair = [one(a, atMs), one(b, atMs)] as const;
      return { atMs, kind, target: 0, durationMs: Math.max(pair[0].durationMs, pair[1].durationMs), latencyMs: 0, errorRate: 0, pair };
    }
    const durationMs = between(lo, hi);
    // A store fault hits one Worker's connection (Postgres); with SQLite, the file every Worker shares.
    const target = kind === "coordinatorRestart" ? Math.floor(rnd() * o.coordinators) : PER_WORKER.has(kind) ? Math.floor(rnd() * o.workers) : 0;
    const degrade = kind === "backendDegrade";
    return { atMs, kind, target, durationMs, latencyMs: degrade ? between(5, 60) : 0, errorRate: degrade ? Math.round(between(5, 35)) / 100 : 0 };
  };
  const events: FaultEvent[] = [];
  let t = o.startMs;
  for (let i = 0; ; i++) {
    const kind = i < firstRound.length ? firstRound[i]! : kinds[Math.floor(rnd() * kinds.length)]!;
    const drawnGapMs = Math.round(-Math.log(1 - rnd()) * o.meanGapMs);
    const gapMs = i < firstRound.length ? Math.min(drawnGapMs, firstRoundGapCapMs) : drawnGapMs;
    const event = one(kind, t + (i === 0 ? 0 : gapMs));
    if (event.atMs + event.durationMs >= o.endMs) return events;
    events.push(event);
    t = event.atMs + event.durationMs;
  }
}

/** firstRoundMs: the longest one fault of each kind a store meets can take, back to back (a fault window must be longer). */
export function firstRoundMs(t: Thresholds, store: SoakStoreKind = "postgres"): number {
  return kindsFor(store).reduce((sum, k) => sum + durationRange(k, t, store)[1], 0);
}

/** countByKind: faults per kind, every kind listed (0 when absent); a pair counts as twoAtOnce, not as its two. */
export function countByKind(events: readonly { kind: FaultKind }[], kinds: readonly FaultKind[] = FAULT_KINDS): Record<FaultKind, number> {
  const out = Object.fromEntries(kinds.map((k) => [k, 0])) as Record<FaultKind, number>;
  for (const e of events) out[e.kind] = (out[e.kind] ?? 0) + 1;
  return out;
}
