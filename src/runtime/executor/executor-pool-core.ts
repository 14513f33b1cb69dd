import type { ExecutorPoolEvent } from "./executor-pool-core-events";
import type { ExecutorPoolInstruction } from "./executor-pool-core-instructions";
import type { Decision } from "../../common/core/decision";
import { assertExecutorTransition, type ExecutorState } from "./executor-transitions";
import { backoffMs } from "../../common/retry/backoff";

export type { ExecutorState } from "./executor-transitions";

/** ExecutorSlotView is what the core tells about one slot (stats, tests): a copy. */
export interface ExecutorSlotView {
  readonly index: number;
  readonly state: ExecutorState;
  /** Calls handed to this executor and not ended (running or suspended). */
  readonly inflight: number;
  /** Increments at every (re)start; part of the executor id, so a late message of an old incarnation is not mistaken. */
  readonly generation: number;
  /** Its last incarnation died before saying Hello (a bad interpreter, unreadable code, ...). */
  readonly diedAtStart: boolean;
  /** When a DEAD slot may start again. */
  readonly restartAtMs: number;
  /** The owner this incarnation serves (null: fresh, none yet). */
  readonly owner: string | null;
}

interface Slot {
  readonly index: number;
  state: ExecutorState;
  /** The calls handed to this incarnation and not ended. */
  readonly calls: Set<string>;
  generation: number;
  startedAtMs: number;
  readyAtMs: number;
  lastHeardMs: number;
  lastPingMs: number;
  /** Deaths since the last healthy spell; drives the backoff. */
  recentDeaths: number;
  restartAtMs: number;
  diedAtStart: boolean;
  /** The owner whose calls this incarnation runs; null until its first call. */
  owner: string | null;
  /** Takes no new calls: another owner waits for it to empty, then it is recycled for them. */
  draining: boolean;
  /** When one of its calls last ended, or it last went from idle to busy: how stalled() judges it. */
  progressAtMs: number;
  /** This incarnation was told to be killed (hung, memory, wall clock): not told again, not pinged. */
  killed: boolean;
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
  /**
   * How many executors one owner's calls are spread over (see `pick`): about the cores the
   * executors can use. More busy processes than cores cost CPU per call, not throughput.
   */
  readonly spread: number;
  /**
   * An executor holding calls of which none ended for this long is stalled (a long step, a slow
   * backend): it does not count towards the spread, so the spread widens by one.
   */
  readonly stallMs: number;
  /** A call running (not waiting for IO) this long kills its executor (EXECUTOR_WALL_CLOCK_CEILING_MS). */
  readonly wallClockCeilingMs: number;
  /** An executor's process tree resident above this many bytes is killed (EXECUTOR_MEMORY_LIMIT_MB). */
  readonly memoryLimitBytes: number;
  /** How often live executors' memory is sampled (sampleMemory) while the limit is finite. */
  readonly memorySampleMs: number;
}

/**
 * ExecutorPoolCore decides, without IO or clocks, which executor takes a call (the least-loaded
 * of the first `spread` READY ones that keep up; otherwise the call waits in one FIFO queue), when
 * to ping, when an executor is hung or over its memory limit or holds a call past the wall-clock
 * ceiling (killed), and when a dead one may be restarted (exponential backoff,
 * reset after a healthy spell). The ExecutorPool adapter does the spawning, sockets and timers.
 *
 * One doorway mutates it: `handle(event, nowMs)` (events in executor-pool-core-events.ts), which
 * returns the instructions to carry out (executor-pool-core-instructions.ts). Queries
 * (`executorId`, `slots`, `readyCount`, `queuedCount`, `startHopeless`) change nothing. The core is
 * re-entrant between steps: the adapter may report events (a killed executor's death, its calls'
 * ends) while it carries out an earlier step's instructions, since every instruction names the
 * incarnation it is about.
 */
export class ExecutorPoolCore {
  private readonly slotList: Slot[];
  /** callId -> the slot holding it. */
  private readonly assigned = new Map<string, Slot>();
  /** Calls waiting for an executor, oldest first. */
  private readonly waiting: string[] = [];
  private readonly waitingSet = new Set<string>();
  /** owner -> how many of its calls wait: the queue's walk ends once every one of them is stuck. */
  private readonly waitingOwners = new Map<string, number>();
  /** callId -> its owner, while it lives. */
  private readonly ownerOf = new Map<string, string>();
  /** callId -> since when it runs in its executor (absent while it waits for IO, or before it is sent). */
  private readonly runningSince = new Map<string, number>();
  /** The time of the last event: what validateState judges "could take it" at. */
  private nowMs = 0;
  /** When live executors' memory is next sampled. */
  private nextSampleAtMs = 0;

  constructor(
    count: number,
    private readonly timing: PoolCoreTiming,
  ) {
    if (!Number.isInteger(count) || count < 1) throw new Error(`ExecutorPoolCore: count must be an integer >= 1, got ${count}`);
    if (!Number.isInteger(timing.spread) || timing.spread < 1) throw new Error(`ExecutorPoolCore: spread must be an integer >= 1, got ${timing.spread}`);
    this.slotList = Array.from({ length: count }, (_, index) => ({
      index,
      state: "DEAD" as ExecutorState,
      calls: new Set<string>(),
      generation: 0,
      startedAtMs: 0,
      readyAtMs: 0,
      lastHeardMs: 0,
      lastPingMs: 0,
      recentDeaths: 0,
      restartAtMs: 0,
      diedAtStart: false,
      owner: null,
      draining: false,
      progressAtMs: 0,
      killed: false,
    }));
  }

  /**
   * handle applies one event at `nowMs` and returns the decision: what the adapter must do now, in
   * order, and when the next thing falls due (a restart, a ping, a hung or overrunning executor, a
   * stalled one widening the spread for waiting calls, a memory sample).
   */
  handle(event: ExecutorPoolEvent, nowMs: number): Decision<ExecutorPoolInstruction> {
    return { instructions: this.step(event, nowMs), wakeAtMs: this.wakeAtMs() };
  }

  private step(event: ExecutorPoolEvent, nowMs: number): ExecutorPoolInstruction[] {
    const out: ExecutorPoolInstruction[] = [];
    this.nowMs = nowMs;
    switch (event.type) {
      case "timeAdvanced":
        this.advance(nowMs, out);
        break;
      case "executorIntroduced": {
        const s = this.slot(event.index);
        // Only a STARTING executor can introduce itself: a Hello that races its own death is refused.
        if (s.state !== "STARTING") break;
        this.moveTo(s, "READY");
        s.diedAtStart = false;
        s.readyAtMs = nowMs;
        s.lastHeardMs = nowMs;
        break;
      }
      case "executorHeardFrom":
        this.slot(event.index).lastHeardMs = nowMs;
        break;
      case "executorDied":
        this.died(this.slot(event.index), nowMs, out);
        break;
      case "callSubmitted":
        if (this.assigned.has(event.callId) || this.waitingSet.has(event.callId)) {
          throw new Error(`ExecutorPoolCore: call ${event.callId} was submitted twice (ids must be unique while a call lives)`);
        }
        this.waiting.push(event.callId);
        this.waitingSet.add(event.callId);
        this.ownerOf.set(event.callId, event.ownerKey ?? "");
        this.countWaiting(event.ownerKey ?? "", 1);
        break;
      case "callRunning":
        // Deleted first, so the map stays in the order the calls started running (wakeAtMs reads its head).
        this.runningSince.delete(event.callId);
        if (this.assigned.has(event.callId)) this.runningSince.set(event.callId, nowMs);
        return out; // frees nothing: no call to place
      case "callWaiting":
        this.runningSince.delete(event.callId);
        return out;
      case "memorySampled": {
        const s = this.slot(event.index);
        if (s.state !== "DEAD" && !s.killed && event.rssBytes > this.timing.memoryLimitBytes) {
          s.killed = true;
          out.push({ type: "killExecutor", index: s.index, executorId: this.executorId(s.index), cause: "OVER_MEMORY", rssBytes: event.rssBytes });
        }
        return out;
      }
      case "callEnded": {
        this.runningSince.delete(event.callId);
        const owner = this.ownerOf.get(event.callId) ?? "";
        this.ownerOf.delete(event.callId);
        const s = this.assigned.get(event.callId);
        if (s) {
          this.assigned.delete(event.callId);
          s.calls.delete(event.callId);
          s.progressAtMs = nowMs;
        } else if (this.waitingSet.delete(event.callId)) {
          this.waiting.splice(this.waiting.indexOf(event.callId), 1);
          this.countWaiting(owner, -1);
        }
        break;
      }
    }
    this.dispatchWaiting(out, nowMs);
    return out;
  }

  /**
   * wakeAtMs: the earliest time something falls due, or null when nothing will until an event.
   * O(slots), plus the running calls of executors already told to die (the oldest running call
   * heads the map).
   */
  private wakeAtMs(): number | null {
    let at = Number.POSITIVE_INFINITY;
    let live = false;
    for (const s of this.slotList) {
      if (s.state === "DEAD") {
        at = Math.min(at, s.restartAtMs);
        continue;
      }
      if (s.killed) continue; // told to die: its death is the next news
      live = true;
      if (s.state === "STARTING") at = Math.min(at, s.startedAtMs + this.timing.startTimeoutMs + 1);
      else {
        at = Math.min(at, s.lastHeardMs + this.timing.pingTimeoutMs + 1, s.lastPingMs + this.timing.pingIntervalMs);
        // A busy executor that stalls widens the spread for calls that wait.
        const stallsAt = s.progressAtMs + this.timing.stallMs;
        if (this.waiting.length > 0 && s.calls.size > 0 && stallsAt > this.nowMs) at = Math.min(at, stallsAt);
      }
    }
    for (const [callId, since] of this.runningSince) {
      if (this.assigned.get(callId)?.killed) continue;
      at = Math.min(at, since + this.timing.wallClockCeilingMs + 1);
      break;
    }
    if (live && Number.isFinite(this.timing.memoryLimitBytes)) at = Math.min(at, this.nextSampleAtMs);
    return at === Number.POSITIVE_INFINITY ? null : at;
  }

  // ---------------------------------------------------------------- queries

  executorId(index: number): string {
    return `${index}.${this.slot(index).generation}`;
  }

  /** slots: a copy of every slot's state, by index. */
  slots(): ExecutorSlotView[] {
    return this.slotList.map((s) => ({
      index: s.index,
      state: s.state,
      inflight: s.calls.size,
      generation: s.generation,
      diedAtStart: s.diedAtStart,
      restartAtMs: s.restartAtMs,
      owner: s.owner,
    }));
  }

  readyCount(): number {
    return this.slotList.filter((s) => s.state === "READY").length;
  }

  /** queuedCount: calls waiting for an executor. */
  queuedCount(): number {
    return this.waiting.length;
  }

  /**
   * startHopeless says whether `needed` READY executors can no longer come from this start:
   * every slot that is not READY has died before saying Hello. Executors of one pool start
   * from the same interpreter and code, so such a death repeats; the pool's start fails at
   * once with the executor's own words instead of waiting out its timeout.
   */
  startHopeless(needed: number): boolean {
    const possible = this.slotList.filter((s) => s.state === "READY" || !s.diedAtStart).length;
    return possible < needed;
  }

  /** validateState checks every invariant and throws an Error listing the broken ones; tests call it after every step. */
  validateState(): void {
    const problems: string[] = [];
    let held = 0;
    for (const s of this.slotList) {
      if (s.state !== "READY" && s.calls.size > 0) problems.push(`slot ${s.index} is ${s.state} but holds ${s.calls.size} calls`);
      if (s.calls.size > this.timing.maxInflightPerExecutor) problems.push(`slot ${s.index} holds ${s.calls.size} calls, over ${this.timing.maxInflightPerExecutor}`);
      for (const id of s.calls) if (this.assigned.get(id) !== s) problems.push(`call ${id} on slot ${s.index} is not recorded there`);
      for (const id of s.calls) if (this.ownerOf.get(id) !== s.owner) problems.push(`call ${id} of owner ${this.ownerOf.get(id)} runs on slot ${s.index} of owner ${s.owner}`);
      held += s.calls.size;
    }
    if (held !== this.assigned.size) problems.push(`${this.assigned.size} calls assigned, slots hold ${held}`);
    if (this.waiting.length !== this.waitingSet.size) problems.push(`queue of ${this.waiting.length} with ${this.waitingSet.size} distinct ids`);
    const owners = new Map<string, number>();
    for (const id of this.waiting) {
      const owner = this.ownerOf.get(id) ?? "";
      owners.set(owner, (owners.get(owner) ?? 0) + 1);
    }
    if (JSON.stringify([...owners].sort()) !== JSON.stringify([...this.waitingOwners].sort())) {
      problems.push(`waiting calls per owner counted as ${JSON.stringify([...this.waitingOwners])}, the queue holds ${JSON.stringify([...owners])}`);
    }
    for (const id of this.waiting) if (this.assigned.has(id)) problems.push(`call ${id} both waits and is assigned`);
    for (const id of this.runningSince.keys()) if (!this.assigned.has(id)) problems.push(`call ${id} runs on no executor`);
    for (const id of this.waiting) {
      const s = this.pick(this.ownerOf.get(id) ?? "");
      if (s !== null) problems.push(`call ${id} waits while executor ${s.index} could take it`);
    }
    if (problems.length > 0) throw new Error(`ExecutorPoolCore state is inconsistent:\n  ${problems.join("\n  ")}`);
  }

  // ---------------------------------------------------------------- internals

  private moveTo(s: Slot, to: ExecutorState): void {
    assertExecutorTransition(s.index, s.state, to);
    s.state = to;
  }

  private slot(index: number): Slot {
    const s = this.slotList[index];
    if (s === undefined) throw new Error(`ExecutorPoolCore: no executor slot ${index} (there are ${this.slotList.length})`);
    return s;
  }

  /**
   * pick: for a call of `owner`, among the READY executors that can take it (serving that owner,
   * or fresh: no owner yet), the one with the fewest calls (the lowest index on a tie) of the first
   * `spread` in index order that are keeping up; null when none can take it. Executors are spread
   * over, not all used: eight busy executors on two cores cost a backfill 20-30% more CPU per
   * block than two (more processes to switch between, fewer calls per wake-up), for no more
   * throughput. A stalled one (none of its calls ended for `stallMs`: a long step, a slow backend)
   * is not keeping up: it takes no calls while another in reach can, and the next one counts instead.
   */
  private pick(owner: string): Slot | null {
    let best: Slot | null = null;
    let busy: Slot | null = null;
    let keepingUp = 0;
    for (const s of this.slotList) {
      if (s.state !== "READY" || s.draining || s.calls.size >= this.timing.maxInflightPerExecutor) continue;
      if (s.owner !== owner && s.owner !== null) continue;
      if (this.stalled(s)) {
        if (!busy || s.calls.size < busy.calls.size) busy = s;
        continue;
      }
      if (!best || s.calls.size < best.calls.size) best = s;
      if (++keepingUp >= this.timing.spread) break;
    }
    return best ?? busy;
  }

  /** stalled: the executor holds calls and none of them ended for stallMs (counted from when it was last idle). */
  private stalled(s: Slot): boolean {
    return s.calls.size > 0 && this.nowMs - s.progressAtMs >= this.timing.stallMs;
  }

  /** idleOfOtherOwner: a READY executor holding no calls whose owner is not `owner`: one to recycle. */
  private idleOfOtherOwner(owner: string): Slot | null {
    // A draining executor is recycled for any owner once empty.
    return this.slotList.find((s) => s.state === "READY" && s.calls.size === 0 && s.owner !== null && (s.owner !== owner || s.draining)) ?? null;
  }

  private countWaiting(owner: string, delta: number): void {
    const n = (this.waitingOwners.get(owner) ?? 0) + delta;
    if (n > 0) this.waitingOwners.set(owner, n);
    else this.waitingOwners.delete(owner);
  }

  /**
   * dispatchWaiting places waiting calls, oldest first; a call no executor can take now does not
   * hold back calls of other owners behind it. An owner with nowhere to go gets an idle executor of
   * another owner recycled (one per owner per step). The walk ends once every owner with calls
   * waiting is stuck: the rest of the queue would only be skipped (walking 2,000 waiting calls on
   * every event was 69% of the pool's CPU at 2,000 calls in flight).
   */
  private dispatchWaiting(out: ExecutorPoolInstruction[], nowMs: number): void {
    const stuckOwners = new Set<string>();
    for (let i = 0; i < this.waiting.length; ) {
      const callId = this.waiting[i]!;
      const owner = this.ownerOf.get(callId) ?? "";
      const s = stuckOwners.has(owner) ? null : this.pick(owner);
      if (s === null) {
        if (!stuckOwners.has(owner)) {
          stuckOwners.add(owner);
          const idle = this.idleOfOtherOwner(owner);
          if (idle) this.recycle(idle, nowMs, out);
          else this.drainOneFor(owner);
          if (stuckOwners.size === this.waitingOwners.size) return;
        }
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      this.waitingSet.delete(callId);
      this.countWaiting(owner, -1);
      s.owner = owner;
      if (s.calls.size === 0) s.progressAtMs = nowMs; // idle until now: its stall is counted from here
      s.calls.add(callId);
      this.assigned.set(callId, s);
      out.push({ type: "sendCall", callId, index: s.index, executorId: this.executorId(s.index) });
    }
  }

  /**
   * drainOneFor: every executor is busy with other owners' calls, so `owner` could wait forever
   * behind a task that keeps them busy: the least-loaded one takes no new calls, and once empty it
   * is recycled for whoever waits. One executor drains at a time.
   */
  private drainOneFor(owner: string): void {
    // An owner with an executor of its own waits for it; only one with none gets another drained.
    if (this.slotList.some((s) => s.draining || (s.state === "READY" && s.owner === owner))) return;
    let victim: Slot | null = null;
    for (const s of this.slotList) {
      if (s.state !== "READY" || s.owner === owner || s.owner === null) continue;
      if (!victim || s.calls.size < victim.calls.size) victim = s;
    }
    if (victim) victim.draining = true;
  }

  /** recycle retires an idle executor for a fresh one, due at once: it did not fail, so no backoff. */
  private recycle(s: Slot, nowMs: number, out: ExecutorPoolInstruction[]): void {
    out.push({ type: "recycleExecutor", index: s.index, executorId: this.executorId(s.index) });
    this.moveTo(s, "DEAD");
    s.owner = null;
    s.draining = false;
    s.diedAtStart = false;
    s.restartAtMs = nowMs;
  }

  private died(s: Slot, nowMs: number, out: ExecutorPoolInstruction[]): void {
    if (s.state === "DEAD") return;
    const healthy = s.state === "READY" && nowMs - s.readyAtMs >= this.timing.healthyAfterMs;
    s.recentDeaths = healthy ? 1 : s.recentDeaths + 1;
    s.diedAtStart = s.state === "STARTING";
    this.moveTo(s, "DEAD");
    s.owner = null;
    s.draining = false;
    for (const id of s.calls) {
      this.assigned.delete(id);
      this.runningSince.delete(id);
    }
    s.calls.clear();
    const backoff = backoffMs(this.timing.backoffBaseMs, this.timing.backoffMaxMs, s.recentDeaths - 1);
    s.restartAtMs = nowMs + backoff;
    out.push({ type: "scheduleRestart", index: s.index, executorId: this.executorId(s.index), restartAtMs: s.restartAtMs });
  }

  /** advance: the hung executors to kill, then the dead ones due to start, then the pings due. */
  private advance(nowMs: number, out: ExecutorPoolInstruction[]): void {
    const starts: ExecutorPoolInstruction[] = [];
    const pings: ExecutorPoolInstruction[] = [];
    for (const s of this.slotList) {
      if (s.state === "DEAD") {
        if (nowMs >= s.restartAtMs) {
          this.moveTo(s, "STARTING");
          s.generation++;
          s.startedAtMs = nowMs;
          s.killed = false;
          s.lastHeardMs = nowMs;
          s.lastPingMs = nowMs;
          starts.push({ type: "startExecutor", index: s.index, executorId: this.executorId(s.index) });
        }
      } else if (s.killed) {
        // Told to die (hung, memory, wall clock): nothing more of it until its death is reported.
      } else if (s.state === "STARTING") {
        if (nowMs - s.startedAtMs > this.timing.startTimeoutMs) {
          s.killed = true;
          out.push({ type: "killHungExecutor", index: s.index, executorId: this.executorId(s.index), cause: "NO_HELLO" });
        }
      } else if (nowMs - s.lastHeardMs > this.timing.pingTimeoutMs) {
        s.killed = true;
        out.push({ type: "killHungExecutor", index: s.index, executorId: this.executorId(s.index), cause: "NO_PONG" });
      } else if (nowMs - s.lastPingMs >= this.timing.pingIntervalMs) {
        s.lastPingMs = nowMs;
        pings.push({ type: "pingExecutor", index: s.index, executorId: this.executorId(s.index) });
      }
    }
    // A call past the wall-clock ceiling kills its executor (the first one found names the call).
    for (const [callId, since] of this.runningSince) {
      const s = this.assigned.get(callId);
      if (!s || s.killed || nowMs - since <= this.timing.wallClockCeilingMs) continue;
      s.killed = true;
      out.push({ type: "killExecutor", index: s.index, executorId: this.executorId(s.index), cause: "WALL_CLOCK", callId, ranMs: nowMs - since });
    }
    const live = this.slotList.some((s) => s.state !== "DEAD" && !s.killed);
    if (live && Number.isFinite(this.timing.memoryLimitBytes) && nowMs >= this.nextSampleAtMs) {
      this.nextSampleAtMs = nowMs + this.timing.memorySampleMs;
      out.push({ type: "sampleMemory", index: -1, executorId: "" });
    }
    out.push(...starts, ...pings);
  }
}
