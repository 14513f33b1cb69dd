import type { Decision } from "../../common/core/decision";
import type { AdmissionEvent } from "./admission-core-events";
import type { AdmissionInstruction } from "./admission-core-instructions";

export interface AdmissionConfig {
  /** Calls running at once (executors x calls per executor). */
  readonly capacity: number;
  /** Requests waiting at once; 0 refuses every request that cannot start now. */
  readonly queueMax: number;
}

interface Queued {
  readonly id: string;
  readonly arrivedMs: number;
  readonly deadlineMs: number;
}

/**
 * AdmissionCore admits Sync Invoker requests: at most `capacity` calls run at once (by default one per
 * executor, so a synchronous caller never waits behind another call inside an executor); the rest wait
 * in one FIFO queue of at most `queueMax`; past that a request is refused at once
 * (backpressure the caller can act on, instead of a queue growing without bound). A queued
 * request whose deadline passes is dropped without running: its caller has given up, and
 * running it would only delay the requests behind it.
 *
 * Sans-IO: one doorway, `handle(event, nowMs)` (events in admission-core-events.ts), which returns
 * a Decision: the instructions for the adapter to carry out (admission-core-instructions.ts) and
 * `wakeAtMs`, the earliest queued deadline; time is passed in.
 */
export class AdmissionCore {
  private readonly running = new Set<string>();
  /** FIFO; bounded by queueMax, so linear scans stay cheap. */
  private queue: Queued[] = [];
  private draining = false;

  constructor(private readonly config: AdmissionConfig) {
    if (!Number.isInteger(config.capacity) || config.capacity < 1) throw new Error(`capacity must be an integer >= 1, got ${config.capacity}`);
    if (!Number.isInteger(config.queueMax) || config.queueMax < 0) throw new Error(`queueMax must be an integer >= 0, got ${config.queueMax}`);
  }

  handle(event: AdmissionEvent, nowMs: number): Decision<AdmissionInstruction> {
    const out: AdmissionInstruction[] = [];
    switch (event.type) {
      case "requestArrived":
        this.arrive(event.id, event.deadlineMs, nowMs, out);
        break;
      case "callFinished":
        this.running.delete(event.id);
        break;
      case "requestAbandoned":
        // Running: its call is being cancelled and will report callFinished. Queued: forget it.
        this.queue = this.queue.filter((q) => q.id !== event.id);
        break;
      case "timeAdvanced":
        break;
      case "drainingStarted":
        this.draining = true;
        break;
    }
    this.expire(nowMs, out);
    this.startQueued(nowMs, out);
    return { instructions: out, wakeAtMs: this.nextDeadlineMs() };
  }

  /** nextDeadlineMs is the earliest deadline among queued requests (null: no timer needed). */
  nextDeadlineMs(): number | null {
    let next = Infinity;
    for (const q of this.queue) next = Math.min(next, q.deadlineMs);
    return next === Infinity ? null : next;
  }

  counts(): { running: number; queued: number } {
    return { running: this.running.size, queued: this.queue.length };
  }

  /** validateState checks the invariants and throws on a broken one; tests call it after every step. */
  validateState(): void {
    if (this.running.size > this.config.capacity) throw new Error(`${this.running.size} running > capacity ${this.config.capacity}`);
    if (this.queue.length > this.config.queueMax) throw new Error(`${this.queue.length} queued > queueMax ${this.config.queueMax}`);
    if (this.queue.length > 0 && this.running.size < this.config.capacity) throw new Error("a request waits while capacity is free");
    for (const q of this.queue) if (this.running.has(q.id)) throw new Error(`${q.id} is both queued and running`);
  }

  private arrive(id: string, deadlineMs: number, nowMs: number, out: AdmissionInstruction[]): void {
    if (this.running.has(id) || this.queue.some((q) => q.id === id)) throw new Error(`request ${id} arrived twice (ids must be unique)`);
    if (this.draining) {
      out.push({ type: "rejectDraining", id });
    } else if (deadlineMs <= nowMs) {
      out.push({ type: "dropExpired", id, queuedMs: 0 });
    } else if (this.running.size < this.config.capacity && this.queue.length === 0) {
      this.running.add(id);
      out.push({ type: "startCall", id, queuedMs: 0 });
    } else if (this.queue.length < this.config.queueMax) {
      this.queue.push({ id, arrivedMs: nowMs, deadlineMs });
    } else {
      out.push({ type: "rejectQueueFull", id, queueMax: this.config.queueMax });
    }
  }

  private expire(nowMs: number, out: AdmissionInstruction[]): void {
    if (!this.queue.some((q) => q.deadlineMs <= nowMs)) return;
    const kept: Queued[] = [];
    for (const q of this.queue) {
      if (q.deadlineMs <= nowMs) out.push({ type: "dropExpired", id: q.id, queuedMs: nowMs - q.arrivedMs });
      else kept.push(q);
    }
    this.queue = kept;
  }

  private startQueued(nowMs: number, out: AdmissionInstruction[]): void {
    while (this.queue.length > 0 && this.running.size < this.config.capacity) {
      const q = this.queue.shift()!;
      this.running.add(q.id);
      out.push({ type: "startCall", id: q.id, queuedMs: nowMs - q.arrivedMs });
    }
  }
}
