/**
 * ExecutorPoolCore decides, without IO or clocks, which executor takes a call, when to ping,
 * when an executor is hung, and when a dead one may be restarted (exponential backoff, reset
 * after a healthy spell). The ExecutorPool adapter does the spawning, sockets and timers.
 */

export type ExecutorState = "STARTING" | "READY" | "DEAD";

export interface ExecutorSlot {
  readonly index: number;
  state: ExecutorState;
  /** Calls handed to this executor and not finished (running or suspended). */
  inflight: number;
  /** Increments at every (re)start; part of the executor id, so a late message of an old incarnation is not mistaken. */
  generation: number;
  startedAtMs: number;
  readyAtMs: number;
  lastPongMs: number;
  lastPingMs: number;
  /** Deaths since the last healthy spell; drives the backoff. */
  recentDeaths: number;
  /** When a DEAD slot may start again. */
  restartAtMs: number;
  /** Its last incarnation died before saying Hello (a bad interpreter, unreadable code, ...). */
  diedAtStart: boolean;
}

export interface PoolCoreTiming {
  readonly pingIntervalMs: number;
  readonly pingTimeoutMs: number;
  /** How long a started executor may take to say Hello before it counts as hung. */
  readonly startTimeoutMs: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  /** Alive this long, an executor's earlier deaths are forgiven. */
  readonly healthyAfterMs: number;
  /** Calls one executor may hold at once; more wait in the pool. */
  readonly maxInflightPerExecutor: number;
}

export interface TickDecisions {
  readonly ping: number[];
  readonly hung: number[];
  readonly start: number[];
}

export class ExecutorPoolCore {
  readonly slots: ExecutorSlot[];

  constructor(
    count: number,
    private readonly timing: PoolCoreTiming,
  ) {
    this.slots = Array.from({ length: count }, (_, index) => ({
      index,
      state: "DEAD" as ExecutorState,
      inflight: 0,
      generation: 0,
      startedAtMs: 0,
      readyAtMs: 0,
      lastPongMs: 0,
      lastPingMs: 0,
      recentDeaths: 0,
      restartAtMs: 0,
      diedAtStart: false,
    }));
  }

  executorId(index: number): string {
    return `${index}.${this.slots[index]!.generation}`;
  }

  /** pickExecutor returns the READY executor with the fewest calls, or null when none can take one. */
  pickExecutor(): number | null {
    let best: ExecutorSlot | null = null;
    for (const s of this.slots) {
      if (s.state !== "READY" || s.inflight >= this.timing.maxInflightPerExecutor) continue;
      if (!best || s.inflight < best.inflight) best = s;
    }
    return best ? best.index : null;
  }

  callAssigned(index: number): void {
    this.slots[index]!.inflight++;
  }

  callFinished(index: number): void {
    const s = this.slots[index]!;
    if (s.inflight > 0) s.inflight--;
  }

  starting(index: number, nowMs: number): string {
    const s = this.slots[index]!;
    s.state = "STARTING";
    s.generation++;
    s.inflight = 0;
    s.startedAtMs = nowMs;
    s.lastPongMs = nowMs;
    s.lastPingMs = nowMs;
    return this.executorId(index);
  }

  ready(index: number, nowMs: number): void {
    const s = this.slots[index]!;
    s.state = "READY";
    s.diedAtStart = false;
    s.readyAtMs = nowMs;
    s.lastPongMs = nowMs;
  }

  /**
   * heard records any message from the executor (a Pong or call traffic): its frame loop is
   * alive. A Pong alone is not enough under load: pings queue behind large ResumeCall frames,
   * and an executor busy working through them would be killed as hung.
   */
  heard(index: number, nowMs: number): void {
    this.slots[index]!.lastPongMs = nowMs;
  }

  /** died records a death and returns when the slot may restart. Idempotent per incarnation. */
  died(index: number, nowMs: number): number {
    const s = this.slots[index]!;
    if (s.state === "DEAD") return s.restartAtMs;
    const healthy = s.state === "READY" && nowMs - s.readyAtMs >= this.timing.healthyAfterMs;
    s.recentDeaths = healthy ? 1 : s.recentDeaths + 1;
    s.diedAtStart = s.state === "STARTING";
    s.state = "DEAD";
    s.inflight = 0;
    const backoff = Math.min(this.timing.backoffMaxMs, this.timing.backoffBaseMs * 2 ** (s.recentDeaths - 1));
    s.restartAtMs = nowMs + backoff;
    return s.restartAtMs;
  }

  /** tick lists the executors to ping, those that are hung, and the dead ones due to restart. */
  tick(nowMs: number): TickDecisions {
    const ping: number[] = [];
    const hung: number[] = [];
    const start: number[] = [];
    for (const s of this.slots) {
      if (s.state === "DEAD") {
        if (nowMs >= s.restartAtMs) start.push(s.index);
      } else if (s.state === "STARTING") {
        if (nowMs - s.startedAtMs > this.timing.startTimeoutMs) hung.push(s.index);
      } else if (nowMs - s.lastPongMs > this.timing.pingTimeoutMs) {
        hung.push(s.index);
      } else if (nowMs - s.lastPingMs >= this.timing.pingIntervalMs) {
        s.lastPingMs = nowMs;
        ping.push(s.index);
      }
    }
    return { ping, hung, start };
  }

  /**
   * startHopeless says whether `needed` READY executors can no longer come from this start:
   * every slot that is not READY has died before saying Hello. Executors of one pool start
   * from the same interpreter and code, so such a death repeats; the pool's start fails at
   * once with the executor's own words instead of waiting out its timeout.
   */
  startHopeless(needed: number): boolean {
    const possible = this.slots.filter((s) => s.state === "READY" || !s.diedAtStart).length;
    return possible < needed;
  }

  readyCount(): number {
    return this.slots.filter((s) => s.state === "READY").length;
  }
}
