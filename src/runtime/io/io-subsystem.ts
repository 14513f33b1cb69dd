import type { IoAnswer } from "../calls/call";
import { RawJson, type JsonValue } from "../json/raw-json";
import { AdmissionLimiter, type AdmissionConfig } from "./admission-limiter";
import { errorOf, type Backend, type BackendRegistry, type CacheDeclaration, type ResolvedOp } from "./backends/backend-registry";
import { BackendError } from "../backend-error";
import { processRunningClock } from "../../common/clock/running-clock";
import { HeadCache, type HeadVerdict } from "./head-cache";
import { IoWindow } from "./io-window";
import { isFinal, ReadCache } from "./read-cache";
import { SingleflightTable, type Flight } from "./singleflight";

export interface IoConfig {
  /** Read cache bound in bytes; 0 disables the cache. */
  readonly cacheMaxBytes: number;
  /** Identical concurrent requests share one backend request. */
  readonly singleflight: boolean;
  /** Backend requests one task may have in flight; the rest wait in FIFO order. */
  readonly taskWindow: number;
  /** Blocks this far below a chain's head are final (cacheable), unless the chain says otherwise. */
  readonly finalityDepth: number;
  /** How long a fetched chain head is trusted before a background refresh. */
  readonly headTtlMs: number;
  readonly admission: AdmissionConfig;
  /** Refuse write ops (the Sync Invoker's mode). */
  readonly readOnly: boolean;
}

/** IoTraceEntry describes one IO request of a call, for its trace. */
export interface IoTraceEntry {
  readonly backend: string;
  readonly op: string;
  /** From the request to its answer, waits included. */
  readonly durationMs: number;
  /** Answered from the read cache (final blocks only). */
  readonly cacheHit: boolean;
  /** Size of the answer's JSON in UTF-8 bytes (0 for an error). */
  readonly bytes: number;
  /** The error type, or null. */
  readonly error: string | null;
}

export interface IoResult {
  /** ioMs is the backend time charged to the call's budget. */
  readonly answer: IoAnswer;
  readonly trace: IoTraceEntry;
}

/** How a request was answered: from the cache, by sharing another's flight, by the backend, or without it. */
export type IoVia = "cache" | "shared" | "backend" | "overloaded" | "refused" | "cancelled";

/** IoObserver is told about every answered request and every backend request (metrics). */
export interface IoObserver {
  answered(backend: string, op: string, via: IoVia): void;
  backendCalled(backend: string, op: string, ok: boolean, ms: number): void;
}

export interface IoOptions {
  /** The chain's own finality depth (chains config), else IoConfig.finalityDepth. */
  readonly finalityDepthOf?: (backend: string, chain: string) => number | undefined;
  readonly observer?: IoObserver;
  /**
   * collectGarbage is called after every `max(64 MiB, cacheMaxBytes / 4)` of evicted cache bytes.
   * Cached values live outside the JavaScript heap, which the collector paces itself by: left
   * alone, evicted values outlive their eviction by gigabytes (a 256 MiB cache held 1.5 GB).
   */
  readonly collectGarbage?: () => void;
  /** Told what the head cache made of each fetched head (`key` is backend and chain): the adapter logs doubts. */
  readonly onHeadVerdict?: (backend: string, chain: string, verdict: HeadVerdict) => void;
  /** Milliseconds this process has stood still so far (default: the process's RunningClock). */
  readonly stalledMs?: () => number;
  /** CPU milliseconds this process has used so far (default: process.cpuUsage()). */
  readonly cpuMs?: () => number;
}

/** A handler's synchronous part at least this long is charged no more than the CPU the process used meanwhile. */
const SYNC_PART_CPU_CHECK_MS = 10;

function processCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

type IoError = Extract<IoAnswer, { ok: false }>["error"];
type Settled = { ok: true; value: RawJson } | { ok: false; error: IoError };

interface Waiter {
  readonly resolve: (r: IoResult) => void;
  readonly joinedAt: number;
  readonly backend: string;
  readonly op: string;
}

/** Request is what a flight's leader carries through the window and admission to the backend. */
interface Request {
  readonly task: TaskIo;
  readonly flight: Flight<Waiter>;
  readonly backend: string;
  readonly op: string;
  readonly resolved: ResolvedOp;
  readonly params: JsonValue;
  /** Set when the op declared the request cacheable: it enters the cache if final when answered. */
  readonly cacheable: Cacheable | null;
  startedAt: number;
  /** syncBusyMs of the subsystem when this request started, and its own handler's synchronous part. */
  busyAtStart: number;
  /** The process's stalled time and CPU time when this request started. */
  stalledAtStart: number;
  cpuAtStart: number;
  ownSyncMs: number;
  holdsWindow: boolean;
}

/** Cacheable is a request whose op declared it cacheable once its block is final. */
interface Cacheable {
  /** The global key: backend, op and the op's canonical params. */
  readonly key: string;
  readonly backend: Backend;
  readonly chain: string;
  readonly block: number;
  /** Final at once: the answer depends on the params alone. */
  readonly pure: boolean;
}

const NO_OBSERVER: IoObserver = { answered() {}, backendCalled() {} };

/**
 * IoSubsystem is the Worker's one path to its backends: every `ctx.io` request passes, in this
 * order, the read-only check, the read cache (final data only), singleflight (identical
 * concurrent requests share one backend request and its answer, an error included), the
 * task's IO window and the backend's admission limiter, then the backend.
 *
 * Keys: a final request (declared cacheable, block at or below head - finality depth) is keyed
 * globally, so tasks share both its cache entry and its flight; any other read is keyed per
 * task; writes are never shared.
 *
 * Budget: a request's ioMs is the time it waited on the backend itself: a hit costs 0, a
 * flight's follower pays from when it joined (or the backend started, if later) to the answer,
 * and the time spent queued in the task's window or the admission queue is not charged. The
 * spec's budget is "CPU + IO backend time, queueing excluded": a call must not run out of budget
 * because other requests, or other tasks, held the backend.
 *
 * Values are RawJson: the backend's answer is serialised once here (or arrives as text), shared
 * by every waiter and cache hit, and spliced into executor frames as is. A RawJson with a span
 * (a block store's final block, which executors may read from the file themselves) keeps it only
 * when the answer is final; otherwise its bytes are read here and the span dropped.
 */
const utf8 = new TextEncoder();
/** The least eviction between two collectGarbage calls. */
const GC_EVERY_EVICTED_BYTES = 64 * 1024 * 1024;

export class IoSubsystem {
  readonly cache: ReadCache;
  private readonly heads: HeadCache;
  /** Head fetches in flight, by backend and chain: an answer that arrives before its chain's head waits for it. */
  private readonly headFetches = new Map<string, Promise<void>>();
  private readonly flights = new SingleflightTable<Waiter>();
  private readonly limiters = new Map<string, AdmissionLimiter<() => void>>();
  private readonly tasks = new Map<string, TaskIo>();
  private readonly observer: IoObserver;
  private unshared = 0;
  private evictedAtLastCollect = 0;
  /**
   * Time spent inside backend handlers' synchronous parts (the local chain generates blocks on
   * this thread), summed. A request is not charged for the time other requests' handlers held
   * the thread while it was in flight: that is this process's CPU, not its backend's latency.
   */
  private syncBusyMs = 0;
  private readonly stalledMs: () => number;
  private readonly cpuMs: () => number;

  constructor(
    readonly backends: BackendRegistry,
    readonly config: IoConfig,
    private readonly options: IoOptions = {},
  ) {
    this.cache = new ReadCache(config.cacheMaxBytes);
    this.heads = new HeadCache(config.headTtlMs);
    this.observer = options.observer ?? NO_OBSERVER;
    this.stalledMs = options.stalledMs ?? (() => processRunningClock().stalledTotalMs());
    this.cpuMs = options.cpuMs ?? processCpuMs;
  }

  /** forTask gives the task's IO handle (one per task until it ends). */
  forTask(taskId: string): TaskIo {
    let t = this.tasks.get(taskId);
    if (!t) this.tasks.set(taskId, (t = new TaskIo(this, taskId, this.config.taskWindow)));
    return t;
  }

  /** The backend's limiter (created on first use). */
  limiter(backend: string): AdmissionLimiter<() => void> {
    let l = this.limiters.get(backend);
    if (!l) this.limiters.set(backend, (l = new AdmissionLimiter(this.config.admission)));
    return l;
  }

  /** Backends that have a limiter (metrics). */
  limiterNames(): string[] {
    return [...this.limiters.keys()];
  }

  /** What is held now, for metrics and leak checks. */
  snapshot(): { tasks: number; flights: number; flightTasks: number } {
    return { tasks: this.tasks.size, flights: this.flights.size, flightTasks: this.flights.tasks };
  }

  /** headsSettled resolves once every head fetch under way has been recorded (tests, tools). */
  async headsSettled(): Promise<void> {
    await Promise.all([...this.headFetches.values()]);
  }

  /** isReadOp: `backend.op` exists and only reads (so it may be asked before a call asks it: IoPrefetchPlan). */
  isReadOp(backend: string, op: string): boolean {
    const resolved = this.backends.resolve(backend, op);
    return "op" in resolved && resolved.op.kind === "read";
  }

  /** @internal TaskIo's request path. */
  request(task: TaskIo, backend: string, op: string, params: JsonValue): Promise<IoResult> {
    const joinedAt = performance.now();
    const resolved = this.backends.resolve(backend, op);
    // Names that resolve to nothing come from user code: they stay out of metric labels.
    if (!("op" in resolved)) return Promise.resolve(this.local(backend, op, joinedAt, resolved, "refused", "unknown"));
    if (this.config.readOnly && resolved.op.kind === "write") {
      return Promise.resolve(
        this.local(backend, op, joinedAt, { type: "PermissionDenied", message: `${backend}.${op} is a write op; this IO path is read-only` }, "refused"),
      );
    }
    if (task.ended) return Promise.resolve(this.local(backend, op, joinedAt, cancelled(backend, op), "cancelled"));
    const cacheable = resolved.op.kind === "read" ? this.cacheableOf(backend, op, resolved, params) : null;
    // The cache holds answers that were final when they entered it; one is served only while its
    // block is final by the head believed now (a chain confirmed to have gone back makes recent
    // blocks non-final again): a block that may change is never served by its number alone.
    if (cacheable !== null && this.cache.enabled && this.isFinalNow(cacheable)) {
      const hit = this.cache.get(cacheable.key);
      if (hit !== undefined) {
        this.observer.answered(backend, op, "cache");
        return Promise.resolve({
          answer: { ok: true, value: hit, ioMs: 0 },
          trace: { backend, op, durationMs: performance.now() - joinedAt, cacheHit: true, bytes: hit.byteLength, error: null },
        });
      }
    }
    const flightKey =
      !this.config.singleflight || resolved.op.kind === "write"
        ? `\u0001${++this.unshared}`
        : cacheable !== null && this.isFinalNow(cacheable)
          ? cacheable.key
          : `\u0002${task.taskId}\u0000${backend}\u0000${op}\u0000${JSON.stringify(params)}`; // \u0001, \u0002: never a backend name
    return new Promise<IoResult>((resolve) => {
      const { flight, lead } = this.flights.join(flightKey, task.taskId, { resolve, joinedAt, backend, op });
      if (!lead) return;
      const req: Request = { task, flight, backend, op, resolved, params, cacheable, startedAt: NaN, busyAtStart: 0, stalledAtStart: 0, cpuAtStart: 0, ownSyncMs: 0, holdsWindow: false };
      const go = (viaWindow: boolean) => {
        req.holdsWindow = viaWindow;
        this.admit(req);
      };
      if (task.window.acquire(go)) go(true);
    });
  }

  /** @internal TaskIo.end: the task's waiters are answered as cancelled, its queued leaders go on only for other tasks' waiters. */
  dropTask(task: TaskIo, queuedLeaders: ((viaWindow: boolean) => void)[]): void {
    this.tasks.delete(task.taskId);
    for (const w of this.flights.dropTask(task.taskId)) w.resolve(this.local(w.backend, w.op, w.joinedAt, cancelled(w.backend, w.op), "cancelled"));
    for (const go of queuedLeaders) queueMicrotask(() => go(false));
  }

  /** cacheableOf reads the op's cache declaration (none for bad params: the op's handler reports them). */
  private cacheableOf(backend: string, op: string, r: ResolvedOp, params: JsonValue): Cacheable | null {
    if (!r.op.cache) return null;
    let decl: CacheDeclaration | null;
    try {
      decl = r.op.cache(params);
    } catch {
      return null;
    }
    if (decl === null) return null;
    const key = `${backend}\u0000${op}\u0000${decl.key}`;
    if ("pure" in decl) return { key, backend: r.backend, chain: "", block: 0, pure: true };
    return r.backend.head ? { key, backend: r.backend, chain: decl.chain, block: decl.block, pure: false } : null;
  }

  /** isFinalNow applies the finality rule with the chain's last known head (none known yet: not final). */
  private isFinalNow(c: Cacheable): boolean {
    if (c.pure) return true;
    const head = this.headOf(c.backend, c.chain);
    if (head === undefined) return false;
    const depth = this.options.finalityDepthOf?.(c.backend.name, c.chain) ?? this.config.finalityDepth;
    return isFinal(c.block, head, depth);
  }

  /** headOf gives the chain's last known head and refreshes it in the background when due. */
  private headOf(b: Backend, chain: string): number | undefined {
    const key = headKey(b, chain);
    const { head, refresh } = this.heads.lookup(key, performance.now());
    if (refresh) {
      const fetched = b.head!(chain).then(
        (h) => {
          const verdict = this.heads.refreshed(key, h, performance.now());
          this.options.onHeadVerdict?.(b.name, chain, verdict);
        },
        () => this.heads.refreshFailed(key, performance.now()),
      );
      this.headFetches.set(key, fetched);
      void fetched.then(() => this.headFetches.delete(key));
    }
    return head;
  }

  /**
   * cacheIfFinal puts a fresh answer in the cache if its block is final; if that is not known
   * yet but the chain's head is being fetched, it decides again when the head arrives. Else a
   * chain's first reads (the head unknown until the first fetch returns) would never be cached.
   */
  private cacheIfFinal(c: Cacheable, raw: RawJson): void {
    // A null answer (a block the node does not have yet) is never immutable: tomorrow it is a block.
    if (raw.byteLength === 4 && raw.span === null && raw.parse() === null) return;
    if (this.isFinalNow(c)) {
      this.cachePut(c.key, raw);
      return;
    }
    void this.headFetches.get(headKey(c.backend, c.chain))?.then(() => {
      if (this.isFinalNow(c)) this.cachePut(c.key, raw);
    });
  }

  private cachePut(key: string, raw: RawJson): void {
    this.cache.put(key, raw);
    const every = Math.max(GC_EVERY_EVICTED_BYTES, this.config.cacheMaxBytes / 4);
    if (this.options.collectGarbage && this.cache.evictedBytes - this.evictedAtLastCollect >= every) {
      this.evictedAtLastCollect = this.cache.evictedBytes;
      this.options.collectGarbage();
    }
  }

  private admit(req: Request): void {
    if (!this.flights.isLive(req.flight)) return this.releaseWindow(req);
    const limiter = this.limiter(req.backend);
    const run = () => this.run(req, limiter);
    const decision = limiter.acquire(run);
    if (decision === "granted") run();
    else if (decision === "rejected") {
      this.releaseWindow(req);
      this.settle(req, {
        ok: false,
        error: {
          type: "BackendOverloaded",
          message: `${req.backend}.${req.op}: the backend is at its admission limit (${limiter.limit} in flight, ${limiter.queued} queued); retry later`,
          retryable: true,
        },
      }, "overloaded");
    }
  }

  private run(req: Request, limiter: AdmissionLimiter<() => void>): void {
    if (!this.flights.isLive(req.flight)) {
      this.grant(limiter.release(null, performance.now()));
      return this.releaseWindow(req);
    }
    req.startedAt = performance.now();
    req.busyAtStart = this.syncBusyMs;
    req.stalledAtStart = this.stalledMs();
    req.cpuAtStart = this.cpuMs();
    let out: ReturnType<ResolvedOp["op"]["handle"]>;
    try {
      out = req.resolved.op.handle(req.params);
    } catch (e) {
      return this.finish(req, limiter, null, e);
    } finally {
      req.ownSyncMs = this.syncPartMs(req);
      this.syncBusyMs += req.ownSyncMs;
    }
    if (out instanceof Promise) out.then((v) => this.finish(req, limiter, v, undefined), (e: unknown) => this.finish(req, limiter, null, e ?? new Error("rejected")));
    else this.finish(req, limiter, out, undefined);
  }

  private finish(req: Request, limiter: AdmissionLimiter<() => void>, value: JsonValue | RawJson, thrown: unknown): void {
    // Only final data may leave with a span (an executor then reads it from the shared file by
    // offset): a block that can still change is read now and travels as bytes. A chain's first
    // answers arrive before its head does: they wait for it (a microtask for the local chain)
    // rather than all going as bytes.
    if (thrown === undefined && value instanceof RawJson && value.span !== null && !(req.cacheable !== null && this.isFinalNow(req.cacheable))) {
      const headArriving = req.cacheable !== null ? this.headFetches.get(headKey(req.cacheable.backend, req.cacheable.chain)) : undefined;
      if (headArriving) {
        void headArriving.then(() => this.finish(req, limiter, value, thrown));
        return;
      }
      try {
        value = value.withoutSpan();
      } catch (e) {
        thrown = e;
      }
    }
    const now = performance.now();
    const ms = this.backendMs(req, now);
    const ok = thrown === undefined;
    this.observer.backendCalled(req.backend, req.op, ok, ms);
    this.grant(limiter.release({ rttMs: ms, overloaded: !ok && thrown instanceof BackendError && thrown.retryable }, now));
    this.releaseWindow(req);
    if (!ok) return this.settle(req, { ok: false, error: errorOf(req.backend, req.op, thrown) }, "backend");
    // Held as UTF-8 bytes only: that is what the frame encoder copies and what the cache charges.
    const raw = value instanceof RawJson ? value : new RawJson(utf8.encode(JSON.stringify(value) ?? "null"));
    // Final is decided again at the answer: the head may have arrived (or moved) meanwhile.
    if (req.cacheable !== null && this.cache.enabled) this.cacheIfFinal(req.cacheable, raw);
    this.settle(req, { ok: true, value: raw }, "backend");
  }

  /**
   * backendMs: how long the request's backend took, from its start to `now`, less the time other
   * requests' handlers held this thread meanwhile (their synchronous parts) and the time this
   * process stood still (a stopped Worker did not wait on its backend: see RunningClock), never
   * less than its own synchronous part (see syncPartMs). A handler that holds the thread past the clock's tolerance
   * shows in both figures: the larger one is taken, not their sum.
   */
  private backendMs(req: Request, now: number): number {
    const others = this.syncBusyMs - req.busyAtStart - req.ownSyncMs;
    const stalled = this.stalledMs() - req.stalledAtStart;
    return Math.max(req.ownSyncMs, now - req.startedAt - Math.max(0, others, stalled));
  }

  /**
   * syncPartMs: how long the request's handler held this thread before it returned, but no more
   * than the CPU the process used meanwhile: a stop inside that stretch (SIGSTOP, a frozen VM) is
   * not the backend's cost, nor is the machine's load. (Found by the soak under load: a Worker
   * stopped for 7.2 s while the local chain generated a block charged the call "cpu 0 ms + io
   * 7216 ms"; the stall deduction in backendMs cannot see a stop inside the request's own part.)
   */
  private syncPartMs(req: Request): number {
    const wallMs = performance.now() - req.startedAt;
    return wallMs < SYNC_PART_CPU_CHECK_MS ? wallMs : Math.min(wallMs, this.cpuMs() - req.cpuAtStart);
  }

  /** Waiters released from a queue start on a fresh stack: a run of synchronous backends must not recurse. */
  private grant(granted: (() => void)[]): void {
    for (const g of granted) queueMicrotask(g);
  }

  private releaseWindow(req: Request): void {
    if (!req.holdsWindow) return;
    req.holdsWindow = false;
    const next = req.task.window.release();
    if (next) queueMicrotask(() => next(true));
  }

  private settle(req: Request, s: Settled, via: IoVia): void {
    const now = performance.now();
    const bytes = s.ok ? s.value.byteLength : 0;
    const error = s.ok ? null : s.error.type;
    let first = true;
    for (const w of this.flights.settle(req.flight)) {
      // The leader is the first waiter of its own task; the others shared its flight.
      this.observer.answered(req.backend, req.op, first || via !== "backend" ? via : "shared");
      first = false;
      const ioMs = Number.isNaN(req.startedAt) ? 0 : Math.max(0, this.backendMs(req, now) - Math.max(0, w.joinedAt - req.startedAt));
      w.resolve({ answer: { ...s, ioMs }, trace: { backend: req.backend, op: req.op, durationMs: now - w.joinedAt, cacheHit: false, bytes, error } });
    }
  }

  private local(backend: string, op: string, joinedAt: number, error: IoError, via: IoVia, label?: string): IoResult {
    this.observer.answered(label ?? backend, label ?? op, via);
    return { answer: { ok: false, error, ioMs: 0 }, trace: { backend, op, durationMs: performance.now() - joinedAt, cacheHit: false, bytes: 0, error: error.type } };
  }
}

function headKey(b: Backend, chain: string): string {
  return `${b.name}\u0000${chain}`;
}

function cancelled(backend: string, op: string): IoError {
  return { type: "Cancelled", message: `${backend}.${op}: the task ended` };
}

/**
 * TaskIo is one task's handle on the IO subsystem: its requests share its IO window, and `end`
 * (the task finished, failed or was cancelled) drops everything the task still waits on.
 */
export class TaskIo {
  readonly window: IoWindow<(viaWindow: boolean) => void>;
  ended = false;

  constructor(
    private readonly io: IoSubsystem,
    readonly taskId: string,
    windowSize: number,
  ) {
    this.window = new IoWindow(windowSize);
  }

  /** isReadOp: `backend.op` exists here and only reads. */
  isReadOp(backend: string, op: string): boolean {
    return this.io.isReadOp(backend, op);
  }

  /** call runs one `ctx.io(backend, op, params)` request: its answer and its trace entry. Never rejects. */
  call(backend: string, op: string, params: JsonValue): Promise<IoResult> {
    return this.io.request(this, backend, op, params);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.io.dropTask(this, this.window.drain());
  }
}
