import { ErrorCode } from "../../common/error-code";
import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";
import { CandidateIndex, DEFAULT_CHUNK_LOAD, type RankedEntry, WalkVerdict } from "./candidate-index";
import { type CoordinatorCoreConfig, validateCoordinatorCoreConfig } from "./config";
import { CoordinatorError, describeFilterCounts, type FilterCounts } from "./coordinator-error";
import { DeadlineHeap } from "../../common/deadline-heap";
import { freeCapacity, type WorkerView } from "./worker-view";
import type { CandidateRequested, CoordinatorEvent } from "./coordinator-core-events";
import type { CandidateResult, CoordinatorDecision, ReplyOf } from "./coordinator-core-instructions";


/**
 * candidateRanksBefore is the seed's ranking of the Workers that pass the hard filters: larger
 * free capacity first, then the newer heartbeat, then the smaller penalty, then the smaller
 * address (plain JS string `<`, i.e. UTF-16 code units). It is a strict total order on distinct
 * addresses. A candidateRequested event is answered with the first Worker in this order.
 */
export function candidateRanksBefore(a: WorkerView, b: WorkerView): boolean {
  const fa = freeCapacity(a);
  const fb = freeCapacity(b);
  if (fa !== fb) return fa > fb;
  if (a.lastHeartbeatMs !== b.lastHeartbeatMs) return a.lastHeartbeatMs > b.lastHeartbeatMs;
  if (a.penalty !== b.penalty) return a.penalty < b.penalty;
  return a.workerAddr < b.workerAddr;
}

/**
 * StaticFilter is the first heartbeat-only filter a Worker fails (ELIGIBLE: none). It depends on
 * the heartbeat and the config only, never on `now`, so it is computed once per heartbeat.
 */
type StaticFilter = "OVER_CPU_RED_LINE" | "OVER_MEMORY_RED_LINE" | "OVER_ERROR_RATE_RED_LINE" | "NO_FREE_CAPACITY" | "ELIGIBLE";

/**
 * Placement says where a Worker's record lives:
 * - INDEXED: ELIGIBLE and its breaker deadline <= breakerWatermarkMs: in the CandidateIndex.
 * - PARKED: ELIGIBLE but its breaker deadline > breakerWatermarkMs: waits in breakerHeap only.
 * - FILTERED: fails a static filter: only counted.
 */
type Placement = "INDEXED" | "PARKED" | "FILTERED";

/** WorkerRecord is the core's mutable WorkerView plus the bookkeeping of its placement. */
class WorkerRecord implements WorkerView, RankedEntry {
  readonly workerAddr: string;
  // Assigned by copyHeartbeat, which the constructor calls.
  taskSlots!: number;
  reservedSlots!: number;
  runningTasks!: number;
  cpuPercent!: number;
  memoryPercent!: number;
  memoryAvailableBytes!: number;
  memoryTotalBytes!: number;
  processRssBytes!: number;
  errorRate!: number;
  lastHeartbeatMs!: number;
  circuitBreakerDeadlineMs = 0;
  recentFailureCount = 0;
  penalty = 0;
  /** taskSlots - reservedSlots - runningTasks, kept for the index's comparisons. */
  free!: number;
  staticFilter: StaticFilter = "ELIGIBLE";
  placement: Placement = "FILTERED";
  /** False once the Worker left the view: lazily deleted heap entries check it. */
  alive = true;

  constructor(hb: WorkerHeartbeat) {
    this.workerAddr = hb.workerAddr;
    this.copyHeartbeat(hb);
  }

  copyHeartbeat(hb: WorkerHeartbeat): void {
    this.taskSlots = hb.taskSlots;
    this.reservedSlots = hb.reservedSlots;
    this.runningTasks = hb.runningTasks;
    this.cpuPercent = hb.cpuPercent;
    this.memoryPercent = hb.memoryPercent;
    this.memoryAvailableBytes = hb.memoryAvailableBytes;
    this.memoryTotalBytes = hb.memoryTotalBytes;
    this.processRssBytes = hb.processRssBytes;
    this.errorRate = hb.errorRate;
    this.lastHeartbeatMs = hb.lastHeartbeatMs;
    this.free = hb.taskSlots - hb.reservedSlots - hb.runningTasks;
  }

  snapshot(): WorkerView {
    return {
      workerAddr: this.workerAddr,
      taskSlots: this.taskSlots,
      reservedSlots: this.reservedSlots,
      runningTasks: this.runningTasks,
      cpuPercent: this.cpuPercent,
      memoryPercent: this.memoryPercent,
      memoryAvailableBytes: this.memoryAvailableBytes,
      memoryTotalBytes: this.memoryTotalBytes,
      processRssBytes: this.processRssBytes,
      errorRate: this.errorRate,
      lastHeartbeatMs: this.lastHeartbeatMs,
      circuitBreakerDeadlineMs: this.circuitBreakerDeadlineMs,
      recentFailureCount: this.recentFailureCount,
      penalty: this.penalty,
    };
  }
}

/** CoordinatorCoreOptions tunes the data structures, never the decisions. */
export interface CoordinatorCoreOptions {
  /** Chunk load of the CandidateIndex (see candidate-index.ts). */
  readonly indexChunkLoad?: number;
}

/**
 * CoordinatorCore is the Coordinator's Sans-IO decision engine (the seed's `core.CoordinatorCore`).
 * It never reads a clock, never does IO and never logs: every step takes `nowMs` (UTC ms, the
 * same clock Workers write into `lastHeartbeatMs`), and every decision returns its reason as a
 * CoordinatorError. It is not re-entrant by itself; the adapters serialise calls.
 *
 * One doorway mutates it: `handle(event, nowMs)` (see CoordinatorEvent): the registry watcher's
 * events (workerListLoaded, workerUpdated, workerRemoved, watchDisconnected, watchReconnected),
 * the reservation loop's candidateRequested (answered with a CandidateResult) and its feedback
 * (slotReserved, slotRejected, workerWasFull, slotUnconfirmed). Queries (`isReady`,
 * `readinessError`, `getWorkerView`, `workers`, ...) change nothing.
 *
 * ## How selection stays sub-linear
 *
 * The seed filters and sorts every Worker on every request. Here each Worker's filters are split by
 * what they depend on:
 *
 * - Static filters (red lines, freeCapacity <= 0) depend only on the heartbeat. They are evaluated
 *   once per heartbeat; a Worker failing one is FILTERED and only counted.
 * - The breaker depends on time, but only through one deadline per Worker. A Worker whose breaker
 *   opens is PARKED (taken out of the index) and its deadline goes into a min-heap; a candidate
 *   request first moves every Worker whose deadline has passed back into the index. A broken Worker keeps
 *   reporting full free capacity and fresh heartbeats, so it would otherwise sit at the top of the
 *   ranking and be stepped over by every request.
 * - Every other ELIGIBLE Worker is INDEXED: a CandidateIndex ordered by the rank key
 *   (free capacity desc, lastHeartbeatMs desc, penalty asc, addr asc).
 *
 * A candidate request walks the index from the best and stops at the first Worker that is not
 * excluded, not stale and (only possible when `nowMs` went backwards) not breaker-open. Within one
 * free-capacity group the heartbeats descend, so the stale Workers of a group are a suffix of it:
 * at the first stale Worker the walk jumps (binary search) to the next group.
 *
 * Cost of one selection: O(k log n) for the k breakers that expire by `nowMs` (each opening is
 * paid once), plus O(e + b + g log n) for the walk, where e is the number of excluded Workers
 * ranked above the pick, b the number of breaker-open INDEXED Workers above it (only after the
 * clock went backwards), and g the number of free-capacity groups above the pick that end in stale
 * Workers (one visit and one jump each). Worst case for staleness: every Worker with free capacity
 * >= 2 is stale and the fresh ones have 1 free slot; the walk then makes one jump per distinct free
 * capacity, so g is bounded by the largest taskSlots (a few dozen), never by n.
 *
 * Cost of a heartbeat: O(1) when neither the rank key nor the static filters changed (no
 * repositioning); otherwise one index removal and one insertion, O(log n + chunk load). Since
 * every beat carries a newer lastHeartbeatMs, an INDEXED Worker's beat is almost always the
 * latter: it moves to the front of its free-capacity group.
 *
 * "Every Worker is stale" (Unavailable) needs the newest heartbeat of the whole view: it is kept
 * as a running maximum and recomputed by one scan only after the Worker holding it left or went
 * backwards, and only when a selection asks for it.
 *
 * NO_EXECUTABLE_SLOT reports per-filter counts (see FilterCounts) without a scan: static filter
 * counts and the number of PARKED Workers are kept up to date, the excluded Workers are looked up
 * one by one, and the INDEXED Workers that were not picked are, by elimination, stale. Only when
 * `nowMs` is earlier than the deadline of a breaker that already expired into the index (the
 * clock went back across it) does it fall back to one full scan.
 */
export class CoordinatorCore {
  private readonly config: CoordinatorCoreConfig;
  private readonly records = new Map<string, WorkerRecord>();
  private readonly index: CandidateIndex<WorkerRecord>;
  private readonly breakerHeap = new DeadlineHeap<WorkerRecord>();
  /**
   * breakerWatermarkMs is the largest `nowMs` up to which expired breakers were moved back into the
   * index. Starts at 0: epoch-ms clocks are positive, and a closed breaker has deadline 0.
   */
  private breakerWatermarkMs = 0;
  /**
   * indexedBreakerBoundMs is >= the breaker deadline of every INDEXED Worker (it only grows). While
   * `nowMs` is not below it, no INDEXED Worker has an open breaker, which the O(1) counting relies
   * on. Breakers are rare, so it usually stays far behind the clock, and a clock that steps back a
   * little (or a caller passing a slightly old `nowMs`) keeps the cheap path.
   */
  private indexedBreakerBoundMs = 0;
  private initialized = false;
  private watchDisconnectedAtMs: number | null = null;
  /** newestHeartbeatMs is max(lastHeartbeatMs) of the view unless newestHeartbeatDirty. */
  private newestHeartbeatMs = Number.NEGATIVE_INFINITY;
  private newestHeartbeatDirty = false;
  private overCpuCount = 0;
  private overMemoryCount = 0;
  private overErrorRateCount = 0;
  private noFreeCapacityCount = 0;
  private parkedCount = 0;

  constructor(config: CoordinatorCoreConfig, options: CoordinatorCoreOptions = {}) {
    const problems = validateCoordinatorCoreConfig(config);
    if (problems.length > 0) throw new Error(`invalid CoordinatorCoreConfig: ${problems.join("; ")}`);
    this.config = Object.freeze({ ...config });
    this.index = new CandidateIndex<WorkerRecord>(options.indexChunkLoad ?? DEFAULT_CHUNK_LOAD);
  }

  /**
   * handle applies one event at `nowMs` and returns the decision: the CandidateResult for
   * candidateRequested, `reply: undefined` for every other event. What each event does is
   * documented on its type (coordinator-core-events.ts).
   */
  handle<E extends CoordinatorEvent>(event: E, nowMs: number): CoordinatorDecision<ReplyOf<E>> {
    const decision: CoordinatorDecision = { reply: this.step(event, nowMs), instructions: [], wakeAtMs: null };
    return decision as CoordinatorDecision<ReplyOf<E>>;
  }

  private step(event: CoordinatorEvent, nowMs: number): CandidateResult | undefined {
    switch (event.type) {
      case "workerListLoaded":
        this.loadWorkerList(event.workers);
        return undefined;
      case "workerUpdated":
        this.updateWorker(event.heartbeat);
        return undefined;
      case "workerRemoved":
        this.removeWorker(event.workerAddr);
        return undefined;
      case "watchDisconnected":
        // Only the first disconnect counts: the grace period runs from it.
        if (this.watchDisconnectedAtMs === null) this.watchDisconnectedAtMs = nowMs;
        return undefined;
      case "watchReconnected":
        this.watchDisconnectedAtMs = null;
        return undefined;
      case "candidateRequested":
        return this.selectCandidate(event, nowMs);
      case "slotReserved":
        this.clearFailures(event.workerAddr);
        return undefined;
      case "slotRejected":
      case "slotUnconfirmed":
        this.recordFailure(event.workerAddr, nowMs);
        return undefined;
      case "workerWasFull":
        // A full Worker is healthy; its next heartbeat will show the capacity.
        return undefined;
      case "timeAdvanced":
        // Nothing here falls due by itself: ages and the grace period are judged at each request.
        return undefined;
    }
  }

  // ---------------------------------------------------------------- events

  /** loadWorkerList: workerListLoaded. */
  private loadWorkerList(workers: readonly WorkerHeartbeat[]): void {
    const next = new Map<string, WorkerRecord>();
    for (const hb of workers) {
      const rec = next.get(hb.workerAddr) ?? this.records.get(hb.workerAddr);
      if (rec === undefined) next.set(hb.workerAddr, new WorkerRecord(hb));
      else {
        rec.copyHeartbeat(hb);
        next.set(hb.workerAddr, rec);
      }
    }
    for (const [addr, rec] of this.records) if (!next.has(addr)) rec.alive = false;

    this.records.clear();
    this.overCpuCount = this.overMemoryCount = this.overErrorRateCount = this.noFreeCapacityCount = 0;
    this.parkedCount = 0;
    this.breakerHeap.clear();
    const indexed: WorkerRecord[] = [];
    let newest = Number.NEGATIVE_INFINITY;
    for (const [addr, rec] of next) {
      this.records.set(addr, rec);
      rec.staticFilter = this.staticFilterOf(rec);
      rec.placement = this.placementOf(rec);
      this.countIn(rec);
      if (rec.placement === "INDEXED") {
        indexed.push(rec);
        this.noteIndexedBreaker(rec);
      }
      if (rec.circuitBreakerDeadlineMs > this.breakerWatermarkMs) this.breakerHeap.push(rec.circuitBreakerDeadlineMs, rec);
      if (rec.lastHeartbeatMs > newest) newest = rec.lastHeartbeatMs;
    }
    this.index.rebuild(indexed);
    this.newestHeartbeatMs = newest;
    this.newestHeartbeatDirty = false;
    this.initialized = true;
  }

  /** updateWorker: workerUpdated. */
  private updateWorker(hb: WorkerHeartbeat): void {
    const rec = this.records.get(hb.workerAddr);
    if (rec === undefined) {
      const fresh = new WorkerRecord(hb);
      this.records.set(hb.workerAddr, fresh);
      this.attach(fresh);
      this.noteHeartbeat(fresh.lastHeartbeatMs, Number.NEGATIVE_INFINITY);
      return;
    }
    const previousHeartbeatMs = rec.lastHeartbeatMs;
    const free = hb.taskSlots - hb.reservedSlots - hb.runningTasks;
    const filter = this.staticFilterOfValues(hb.cpuPercent, hb.memoryPercent, hb.errorRate, free);
    const keyUnchanged = free === rec.free && hb.lastHeartbeatMs === previousHeartbeatMs;
    if (filter === rec.staticFilter && (rec.placement !== "INDEXED" || keyUnchanged)) {
      // Neither the placement nor the rank key moves: copy in place.
      rec.copyHeartbeat(hb);
    } else {
      this.detach(rec);
      rec.copyHeartbeat(hb);
      this.attach(rec);
    }
    this.noteHeartbeat(rec.lastHeartbeatMs, previousHeartbeatMs);
  }

  /** removeWorker: workerRemoved. */
  private removeWorker(workerAddr: string): void {
    const rec = this.records.get(workerAddr);
    if (rec === undefined) return;
    this.detach(rec);
    rec.alive = false;
    this.records.delete(workerAddr);
    if (!this.newestHeartbeatDirty && rec.lastHeartbeatMs >= this.newestHeartbeatMs) this.newestHeartbeatDirty = true;
    if (this.records.size === 0) {
      this.newestHeartbeatMs = Number.NEGATIVE_INFINITY;
      this.newestHeartbeatDirty = false;
    }
  }

  // ---------------------------------------------------------------- queries

  /** isReady is false before the first full list and once the watch has been down longer than the grace period. */
  isReady(nowMs: number): boolean {
    return this.readinessError(nowMs) === null;
  }

  /** readinessError is the UNAVAILABLE error that makes isReady false, or null when ready. */
  readinessError(nowMs: number): CoordinatorError | null {
    if (!this.initialized) {
      return new CoordinatorError(
        ErrorCode.ErrUnavailable,
        "the worker view is not initialized yet: no full worker list has been received from etcd",
      );
    }
    const at = this.watchDisconnectedAtMs;
    if (at !== null && nowMs - at > this.config.watchGracePeriodMs) {
      const grace = this.config.watchGracePeriodMs;
      return new CoordinatorError(
        ErrorCode.ErrUnavailable,
        `the etcd watch has been disconnected for ${nowMs - at} ms, longer than the ${grace} ms grace period; ` +
          "the worker view is not trusted",
      );
    }
    return null;
  }

  /** selectCandidate: candidateRequested (see CandidateRequested for the contract). */
  private selectCandidate(request: CandidateRequested, nowMs: number): CandidateResult {
    const excludeAddrs = request.excludeAddrs;
    const notReady = this.readinessError(nowMs);
    if (notReady !== null) return { err: notReady };
    this.advanceBreakers(nowMs);
    const n = this.records.size;
    if (n === 0) {
      return {
        err: new CoordinatorError(
          ErrorCode.ErrNoExecutableSlot,
          "the worker view is empty: no worker is registered in etcd",
          this.countsOf(excludeAddrs, nowMs),
        ),
      };
    }
    const timeoutMs = this.config.heartbeatTimeoutMs;
    const newest = this.newestHeartbeat();
    if (nowMs - newest > timeoutMs) {
      const what = n === 1 ? "the only worker's heartbeat is" : `all ${n} workers' heartbeats are`;
      return {
        err: new CoordinatorError(
          ErrorCode.ErrUnavailable,
          `${what} older than ${timeoutMs} ms (the newest is ${nowMs - newest} ms old); the worker view is not trusted`,
        ),
      };
    }
    const picked = this.index.walk((r) => {
      if (nowMs - r.lastHeartbeatMs > timeoutMs) return WalkVerdict.SKIP_GROUP;
      if (nowMs < r.circuitBreakerDeadlineMs || excludeAddrs.has(r.workerAddr)) return WalkVerdict.SKIP;
      return WalkVerdict.ACCEPT;
    });
    if (picked !== undefined) return { workerAddr: picked.workerAddr };
    const counts = this.countsOf(excludeAddrs, nowMs);
    return {
      err: new CoordinatorError(
        ErrorCode.ErrNoExecutableSlot,
        `no worker with free capacity passes the filters (${describeFilterCounts(counts, this.config, timeoutMs)})`,
        counts,
      ),
    };
  }

  /** clearFailures: slotReserved clears the Worker's failure count, penalty and breaker. */
  private clearFailures(workerAddr: string): void {
    const rec = this.records.get(workerAddr);
    if (rec === undefined) return;
    if (rec.recentFailureCount === 0 && rec.penalty === 0 && rec.circuitBreakerDeadlineMs === 0) return;
    this.detach(rec);
    rec.recentFailureCount = 0;
    rec.penalty = 0;
    rec.circuitBreakerDeadlineMs = 0;
    this.attach(rec);
  }

  // ---------------------------------------------------------------- introspection

  /** getWorkerView returns a snapshot of one Worker's view (a copy), or undefined. */
  getWorkerView(workerAddr: string): Readonly<WorkerView> | undefined {
    return this.records.get(workerAddr)?.snapshot();
  }

  /** workers yields a snapshot of every Worker's view, in no particular order. */
  *workers(): IterableIterator<Readonly<WorkerView>> {
    for (const rec of this.records.values()) yield rec.snapshot();
  }

  workerCount(): number {
    return this.records.size;
  }

  isInitialized(): boolean {
    return this.initialized;
  }

  /** watchDisconnectedSinceMs is the time of the first unreconciled disconnect, or null. */
  watchDisconnectedSinceMs(): number | null {
    return this.watchDisconnectedAtMs;
  }

  /** indexedCount is the number of Workers in the candidate index (passing every static filter, breaker not parked). */
  indexedCount(): number {
    return this.index.size;
  }

  /**
   * validateState checks every internal invariant and throws an Error listing the broken ones.
   * O(n): for tests, which call it after every step.
   */
  validateState(): void {
    const problems: string[] = [...this.index.checkInvariants()];
    let cpu = 0;
    let mem = 0;
    let err = 0;
    let noFree = 0;
    let parked = 0;
    let indexed = 0;
    let newest = Number.NEGATIVE_INFINITY;
    const heapDeadlines = new Map<WorkerRecord, number[]>();
    for (const [dl, rec] of this.breakerHeap.entries()) {
      const list = heapDeadlines.get(rec);
      if (list === undefined) heapDeadlines.set(rec, [dl]);
      else list.push(dl);
    }
    for (const [addr, rec] of this.records) {
      const name = `worker ${addr}`;
      if (rec.workerAddr !== addr) problems.push(`${name}: stored under another address (${rec.workerAddr})`);
      if (!rec.alive) problems.push(`${name}: in the view but not alive`);
      if (rec.free !== freeCapacity(rec)) problems.push(`${name}: cached free ${rec.free} != ${freeCapacity(rec)}`);
      const filter = this.staticFilterOf(rec);
      if (rec.staticFilter !== filter) problems.push(`${name}: static filter ${rec.staticFilter} != ${filter}`);
      const placement = this.placementOf(rec);
      if (rec.placement !== placement) problems.push(`${name}: placement ${rec.placement} != ${placement}`);
      if (rec.penalty !== rec.recentFailureCount) {
        problems.push(`${name}: penalty ${rec.penalty} != failure count ${rec.recentFailureCount}`);
      }
      if (
        rec.circuitBreakerDeadlineMs > this.breakerWatermarkMs &&
        !(heapDeadlines.get(rec) ?? []).includes(rec.circuitBreakerDeadlineMs)
      ) {
        problems.push(`${name}: breaker deadline ${rec.circuitBreakerDeadlineMs} is not in the heap`);
      }
      if (rec.staticFilter === "OVER_CPU_RED_LINE") cpu++;
      else if (rec.staticFilter === "OVER_MEMORY_RED_LINE") mem++;
      else if (rec.staticFilter === "OVER_ERROR_RATE_RED_LINE") err++;
      else if (rec.staticFilter === "NO_FREE_CAPACITY") noFree++;
      if (rec.placement === "PARKED") parked++;
      if (rec.placement === "INDEXED") {
        indexed++;
        if (rec.circuitBreakerDeadlineMs > this.indexedBreakerBoundMs) {
          problems.push(`${name}: INDEXED with breaker deadline ${rec.circuitBreakerDeadlineMs} above ${this.indexedBreakerBoundMs}`);
        }
      }
      if (rec.lastHeartbeatMs > newest) newest = rec.lastHeartbeatMs;
    }
    for (const rec of this.index.entries()) {
      if (this.records.get(rec.workerAddr) !== rec) problems.push(`index holds ${rec.workerAddr}, which is not in the view`);
      else if (rec.placement !== "INDEXED") problems.push(`index holds ${rec.workerAddr}, placed ${rec.placement}`);
    }
    if (indexed !== this.index.size) problems.push(`${indexed} workers are INDEXED but the index holds ${this.index.size}`);
    const counts: Array<[string, number, number]> = [
      ["overCpuCount", this.overCpuCount, cpu],
      ["overMemoryCount", this.overMemoryCount, mem],
      ["overErrorRateCount", this.overErrorRateCount, err],
      ["noFreeCapacityCount", this.noFreeCapacityCount, noFree],
      ["parkedCount", this.parkedCount, parked],
    ];
    for (const [field, kept, actual] of counts) if (kept !== actual) problems.push(`${field} is ${kept}, actual ${actual}`);
    if (!this.newestHeartbeatDirty && this.newestHeartbeatMs !== newest) {
      problems.push(`newestHeartbeatMs is ${this.newestHeartbeatMs}, actual ${newest}`);
    }
    if (this.newestHeartbeatDirty && this.newestHeartbeatMs < newest) {
      problems.push(`newestHeartbeatMs upper bound ${this.newestHeartbeatMs} is below the actual ${newest}`);
    }
    if (problems.length > 0) throw new Error(`CoordinatorCore state is inconsistent:\n  ${problems.join("\n  ")}`);
  }

  // ---------------------------------------------------------------- internals

  /** recordFailure: slotRejected and slotUnconfirmed count toward the penalty and the breaker. */
  private recordFailure(workerAddr: string, nowMs: number): void {
    const rec = this.records.get(workerAddr);
    if (rec === undefined) return;
    this.detach(rec);
    rec.recentFailureCount += 1;
    rec.penalty = rec.recentFailureCount;
    if (rec.recentFailureCount >= this.config.circuitBreakerThreshold) {
      rec.circuitBreakerDeadlineMs = nowMs + this.config.circuitBreakerCooldownMs;
      if (rec.circuitBreakerDeadlineMs > this.breakerWatermarkMs) {
        this.breakerHeap.push(rec.circuitBreakerDeadlineMs, rec);
        this.maybeCompactBreakerHeap();
      }
    }
    this.attach(rec);
  }

  /** advanceBreakers moves every PARKED Worker whose deadline is <= nowMs back into the index. */
  private advanceBreakers(nowMs: number): void {
    if (nowMs <= this.breakerWatermarkMs) return;
    this.breakerWatermarkMs = nowMs;
    const heap = this.breakerHeap;
    while (heap.peekDeadline() <= nowMs) {
      const rec = heap.pop() as WorkerRecord;
      // Lazy deletion: skip entries of removed Workers and superseded deadlines.
      if (!rec.alive || rec.placement !== "PARKED" || rec.circuitBreakerDeadlineMs > nowMs) continue;
      this.detach(rec);
      this.attach(rec);
    }
  }

  /** maybeCompactBreakerHeap drops superseded heap entries once they outnumber the Workers. */
  private maybeCompactBreakerHeap(): void {
    if (this.breakerHeap.size <= 2 * this.records.size + 1024) return;
    this.breakerHeap.clear();
    for (const rec of this.records.values()) {
      if (rec.circuitBreakerDeadlineMs > this.breakerWatermarkMs) this.breakerHeap.push(rec.circuitBreakerDeadlineMs, rec);
    }
  }

  private staticFilterOf(v: WorkerRecord): StaticFilter {
    return this.staticFilterOfValues(v.cpuPercent, v.memoryPercent, v.errorRate, v.free);
  }

  private staticFilterOfValues(cpu: number, memory: number, errorRate: number, free: number): StaticFilter {
    const c = this.config;
    if (cpu > c.cpuRedLine) return "OVER_CPU_RED_LINE";
    if (memory > c.memoryRedLine) return "OVER_MEMORY_RED_LINE";
    if (errorRate > c.errorRateRedLine) return "OVER_ERROR_RATE_RED_LINE";
    if (free <= 0) return "NO_FREE_CAPACITY";
    return "ELIGIBLE";
  }

  private placementOf(rec: WorkerRecord): Placement {
    if (rec.staticFilter !== "ELIGIBLE") return "FILTERED";
    return rec.circuitBreakerDeadlineMs > this.breakerWatermarkMs ? "PARKED" : "INDEXED";
  }

  /** attach classifies `rec` (already in the map) and adds it to the index or the counters. */
  private attach(rec: WorkerRecord): void {
    rec.staticFilter = this.staticFilterOf(rec);
    rec.placement = this.placementOf(rec);
    this.countIn(rec);
    if (rec.placement === "INDEXED") {
      this.index.insert(rec);
      this.noteIndexedBreaker(rec);
    }
  }

  private noteIndexedBreaker(rec: WorkerRecord): void {
    if (rec.circuitBreakerDeadlineMs > this.indexedBreakerBoundMs) this.indexedBreakerBoundMs = rec.circuitBreakerDeadlineMs;
  }

  /** detach undoes attach; call it BEFORE changing any field the rank key or the filters read. */
  private detach(rec: WorkerRecord): void {
    if (rec.placement === "INDEXED") this.index.remove(rec);
    this.countOut(rec);
    rec.placement = "FILTERED";
    rec.staticFilter = "ELIGIBLE";
  }

  private countIn(rec: WorkerRecord): void {
    this.count(rec, 1);
  }

  private countOut(rec: WorkerRecord): void {
    this.count(rec, -1);
  }

  private count(rec: WorkerRecord, delta: number): void {
    switch (rec.staticFilter) {
      case "OVER_CPU_RED_LINE":
        this.overCpuCount += delta;
        break;
      case "OVER_MEMORY_RED_LINE":
        this.overMemoryCount += delta;
        break;
      case "OVER_ERROR_RATE_RED_LINE":
        this.overErrorRateCount += delta;
        break;
      case "NO_FREE_CAPACITY":
        this.noFreeCapacityCount += delta;
        break;
      case "ELIGIBLE":
        if (rec.placement === "PARKED") this.parkedCount += delta;
        break;
    }
  }

  /** noteHeartbeat keeps the running maximum of lastHeartbeatMs after one Worker's changed. */
  private noteHeartbeat(currentMs: number, previousMs: number): void {
    if (currentMs >= this.newestHeartbeatMs) {
      // Also when dirty: the stored value is an upper bound of the true maximum.
      this.newestHeartbeatMs = currentMs;
      this.newestHeartbeatDirty = false;
    } else if (previousMs >= this.newestHeartbeatMs) {
      this.newestHeartbeatDirty = true;
    }
  }

  private newestHeartbeat(): number {
    if (this.newestHeartbeatDirty) {
      let newest = Number.NEGATIVE_INFINITY;
      for (const rec of this.records.values()) if (rec.lastHeartbeatMs > newest) newest = rec.lastHeartbeatMs;
      this.newestHeartbeatMs = newest;
      this.newestHeartbeatDirty = false;
    }
    return this.newestHeartbeatMs;
  }

  /**
   * countsOf attributes every Worker to the first failing filter (FilterCounts order), assuming no
   * Worker passes them all. O(|excludeAddrs|) unless nowMs is below indexedBreakerBoundMs.
   */
  private countsOf(excludeAddrs: ReadonlySet<string>, nowMs: number): FilterCounts {
    if (nowMs < this.indexedBreakerBoundMs) return this.countsByScan(excludeAddrs, nowMs);
    let excluded = 0;
    let cpu = this.overCpuCount;
    let mem = this.overMemoryCount;
    let err = this.overErrorRateCount;
    let noFree = this.noFreeCapacityCount;
    let parked = this.parkedCount;
    let indexed = this.index.size;
    for (const addr of excludeAddrs) {
      const rec = this.records.get(addr);
      if (rec === undefined) continue;
      excluded++;
      if (rec.placement === "INDEXED") indexed--;
      else if (rec.placement === "PARKED") parked--;
      else if (rec.staticFilter === "OVER_CPU_RED_LINE") cpu--;
      else if (rec.staticFilter === "OVER_MEMORY_RED_LINE") mem--;
      else if (rec.staticFilter === "OVER_ERROR_RATE_RED_LINE") err--;
      else noFree--;
    }
    // PARKED Workers have deadline > watermark >= nowMs (open); INDEXED ones have deadline <=
    // indexedBreakerBoundMs <= nowMs (closed), so the INDEXED Workers nobody picked are stale.
    return {
      total: this.records.size,
      excluded,
      overCpuRedLine: cpu,
      overMemoryRedLine: mem,
      overErrorRateRedLine: err,
      noFreeCapacity: noFree,
      breakerOpen: parked,
      heartbeatStale: indexed,
    };
  }

  private countsByScan(excludeAddrs: ReadonlySet<string>, nowMs: number): FilterCounts {
    const c = { excluded: 0, cpu: 0, mem: 0, err: 0, noFree: 0, breaker: 0, stale: 0 };
    for (const rec of this.records.values()) {
      if (excludeAddrs.has(rec.workerAddr)) c.excluded++;
      else if (rec.staticFilter === "OVER_CPU_RED_LINE") c.cpu++;
      else if (rec.staticFilter === "OVER_MEMORY_RED_LINE") c.mem++;
      else if (rec.staticFilter === "OVER_ERROR_RATE_RED_LINE") c.err++;
      else if (rec.staticFilter === "NO_FREE_CAPACITY") c.noFree++;
      else if (nowMs < rec.circuitBreakerDeadlineMs) c.breaker++;
      else c.stale++;
    }
    return {
      total: this.records.size,
      excluded: c.excluded,
      overCpuRedLine: c.cpu,
      overMemoryRedLine: c.mem,
      overErrorRateRedLine: c.err,
      noFreeCapacity: c.noFree,
      breakerOpen: c.breaker,
      heartbeatStale: c.stale,
    };
  }
}
