import type { CallResult, CallSource, DispatchedCall, DispatcherEvent } from "./dispatcher-core-events";
import type { CallDecision, DispatcherDecision } from "./dispatcher-core-instructions";
import { backoffMs } from "../../common/retry/backoff";

export type { CallResult, CallSource, DispatchedCall, DispatcherEvent } from "./dispatcher-core-events";
export type { CallDecision, DispatcherDecision, DispatcherInstruction } from "./dispatcher-core-instructions";

/**
 * DispatcherCore decides which calls run next, without IO or clocks. Each task brings a lazy
 * source of calls (a 10-million-block backfill is never materialised); the core keeps at most
 * `taskMaxInflightCalls` of a task in flight, at most `maxInflightCalls` in all, and takes turns
 * between tasks (round robin, one call per turn), so a huge backfill cannot starve a one-call
 * task. A retryable failure is retried after an exponential backoff, up to `maxAttempts`; a
 * non-retryable one (a user's error) never is.
 */

export interface DispatcherConfig {
  /** TaskMaxInflightCalls: 1024. */
  readonly taskMaxInflightCalls: number;
  /** All tasks together (what the executor pool can usefully hold). */
  readonly maxInflightCalls: number;
  /** Attempts per call, the first included. */
  readonly maxAttempts: number;
  readonly retryBackoffBaseMs: number;
  readonly retryBackoffMaxMs: number;
}

export function defaultDispatcherConfig(): DispatcherConfig {
  return { taskMaxInflightCalls: 1024, maxInflightCalls: 2048, maxAttempts: 4, retryBackoffBaseMs: 100, retryBackoffMaxMs: 5_000 };
}

interface Retry<C> {
  readonly index: number;
  readonly attempt: number;
  readonly call: C;
  readonly atMs: number;
}

interface TaskQueue<C> {
  readonly taskId: string;
  readonly source: CallSource<C>;
  nextIndex: number;
  sourceDone: boolean;
  inflight: number;
  /** Retries waiting for their backoff, soonest first. */
  retries: Retry<C>[];
  /** In the round-robin rotation (`order`): false once nothing of it can start again. */
  inOrder: boolean;
}

export class DispatcherCore<C> {
  private readonly tasks = new Map<string, TaskQueue<C>>();
  /**
   * Round-robin order of the task ids that may still start a call. A task whose calls were all
   * handed out and that has no retry waiting leaves it (it rejoins if a retry is scheduled):
   * otherwise every step walked every running task, O(tasks) per event (12 µs per tiny task at
   * 256 in flight, 98 µs at 2,048: bench/worker/dispatcher-steps.ts).
   */
  private order: string[] = [];
  /** Tasks with a retry waiting (nextWakeMs looks at these only). */
  private readonly retrying = new Set<TaskQueue<C>>();
  private cursor = 0;
  private inflight = 0;

  constructor(private readonly config: DispatcherConfig) {}

  /** handle applies one event at `nowMs` and returns the decision (see DispatcherDecision). */
  handle(event: DispatcherEvent<C>, nowMs: number): DispatcherDecision<C> {
    let reply: CallDecision | undefined;
    let started: DispatchedCall<C>[] = [];
    switch (event.type) {
      case "taskAdded":
        this.addTask(event.taskId, event.source);
        break;
      case "taskRemoved":
        this.removeTask(event.taskId);
        break;
      case "callFinished":
        reply = this.callFinished(event.call, event.result, nowMs);
        break;
      case "subCallStarted":
        this.subCallStarted(event.taskId);
        break;
      case "subCallFinished":
        reply = this.subCallFinished(event.taskId, event.attempt, event.result, nowMs);
        break;
      case "timeAdvanced":
        started = this.next(nowMs);
        break;
      default: {
        const never: never = event;
        throw new Error(`unknown dispatcher event ${JSON.stringify(never)}`);
      }
    }
    return { reply, instructions: started.map((call) => ({ type: "startCall", call })), wakeAtMs: this.nextWakeMs() };
  }

  /** validateState checks the invariants and throws on a broken one; tests call it after every step. */
  validateState(): void {
    let sum = 0;
    for (const t of this.tasks.values()) {
      if (t.inflight < 0) throw new Error(`task ${t.taskId} has ${t.inflight} calls in flight`);
      if (t.retries.length > 0 !== this.retrying.has(t)) throw new Error(`task ${t.taskId} has ${t.retries.length} retries but is ${this.retrying.has(t) ? "" : "not "}in the retrying set`);
      for (let i = 1; i < t.retries.length; i++) if (t.retries[i - 1]!.atMs > t.retries[i]!.atMs) throw new Error(`task ${t.taskId}'s retries are out of order`);
      if (t.inOrder !== this.order.includes(t.taskId)) throw new Error(`task ${t.taskId} inOrder=${t.inOrder} disagrees with the rotation`);
      if (!t.inOrder && !(t.sourceDone && t.retries.length === 0)) throw new Error(`task ${t.taskId} left the rotation with calls still to hand out`);
      sum += t.inflight;
    }
    if (sum !== this.inflight) throw new Error(`${this.inflight} calls in flight in all, but the tasks hold ${sum}`);
    if (new Set(this.order).size !== this.order.length) throw new Error("a task is twice in the rotation");
    for (const id of this.order) if (!this.tasks.has(id)) throw new Error(`the rotation holds ${id}, which is not dispatching`);
    for (const t of this.retrying) if (this.tasks.get(t.taskId) !== t) throw new Error(`a removed task ${t.taskId} still waits for a retry`);
  }

  private addTask(taskId: string, source: CallSource<C>): void {
    if (this.tasks.has(taskId)) throw new Error(`task ${taskId} is already dispatching`);
    this.tasks.set(taskId, { taskId, source, nextIndex: 0, sourceDone: false, inflight: 0, retries: [], inOrder: true });
    this.order.push(taskId);
  }

  /**
   * removeTask forgets a task (finished, failed, cancelled, timed out). Its in-flight calls
   * stop counting at once; results that arrive for them later are ignored by callFinished.
   */
  private removeTask(taskId: string): void {
    const t = this.tasks.get(taskId);
    if (!t) return;
    this.inflight -= t.inflight;
    this.tasks.delete(taskId);
    this.retrying.delete(t);
    if (t.inOrder) this.leaveOrder(this.order.indexOf(taskId));
  }

  /** leaveOrder takes the task at `i` out of the rotation, the cursor staying on the task after it. */
  private leaveOrder(i: number): void {
    this.order.splice(i, 1);
    if (this.cursor > i) this.cursor--;
  }

  /**
   * next hands out the calls that may start now: one per task per turn, round robin, while
   * both windows have room. Retries whose backoff has passed go before new calls of their task.
   */
  private next(nowMs: number): DispatchedCall<C>[] {
    const out: DispatchedCall<C>[] = [];
    let idleTurns = 0;
    while (this.inflight < this.config.maxInflightCalls && this.order.length > 0 && idleTurns < this.order.length) {
      if (this.cursor >= this.order.length) this.cursor = 0;
      const at = this.cursor++;
      const t = this.tasks.get(this.order[at]!)!;
      const c = this.takeOne(t, nowMs);
      if (!c) {
        if (t.sourceDone && t.retries.length === 0) {
          t.inOrder = false;
          this.leaveOrder(at);
        } else idleTurns++;
        continue;
      }
      idleTurns = 0;
      t.inflight++;
      this.inflight++;
      out.push(c);
    }
    return out;
  }

  private takeOne(t: TaskQueue<C>, nowMs: number): DispatchedCall<C> | null {
    if (t.inflight >= this.config.taskMaxInflightCalls) return null;
    const r = t.retries[0];
    if (r && r.atMs <= nowMs) {
      t.retries.shift();
      if (t.retries.length === 0) this.retrying.delete(t);
      return { taskId: t.taskId, index: r.index, attempt: r.attempt, call: r.call };
    }
    if (t.sourceDone) return null;
    const next = t.source.next();
    if (next === null) {
      t.sourceDone = true;
      return null;
    }
    return { taskId: t.taskId, index: t.nextIndex++, attempt: 1, call: next.call };
  }

  /** callFinished records a result and says what happens to the call. */
  private callFinished(d: DispatchedCall<C>, result: CallResult, nowMs: number): CallDecision {
    const t = this.release(d.taskId);
    const decision = this.retryDecision(d.attempt, result, nowMs);
    if (t && decision.kind === "retryScheduled") {
      const retry = { index: d.index, attempt: decision.attempt, call: d.call, atMs: decision.atMs };
      const pos = t.retries.findIndex((x) => x.atMs > retry.atMs);
      if (pos < 0) t.retries.push(retry);
      else t.retries.splice(pos, 0, retry);
      this.retrying.add(t);
      if (!t.inOrder) {
        t.inOrder = true;
        this.order.push(t.taskId);
      }
    }
    return decision;
  }

  /**
   * subCallStarted counts a sub-call (a running call's ctx.call) in its task's window and the
   * Worker's: new calls of the task wait while its sub-calls fill the window. A sub-call itself is
   * never held back: its parent is running and waits for it, so holding it could deadlock the task.
   */
  private subCallStarted(taskId: string): void {
    const t = this.tasks.get(taskId);
    if (!t) return;
    t.inflight++;
    this.inflight++;
  }

  /**
   * subCallFinished releases a sub-call's place and decides, by the same rules as for calls,
   * whether its owner tries it again (after `atMs`) or hands the failure to the parent.
   */
  private subCallFinished(taskId: string, attempt: number, result: CallResult, nowMs: number): CallDecision {
    this.release(taskId);
    return this.retryDecision(attempt, result, nowMs);
  }

  private release(taskId: string): TaskQueue<C> | undefined {
    const t = this.tasks.get(taskId);
    if (t) {
      t.inflight--;
      this.inflight--;
    }
    return t;
  }

  /** retryDecision: a retryable failure is tried again after an exponential backoff, up to maxAttempts. */
  private retryDecision(attempt: number, result: CallResult, nowMs: number): CallDecision {
    if (result.ok) return { kind: "done" };
    if (!result.retryable) return { kind: "failed", reason: "not_retryable" };
    if (attempt >= this.config.maxAttempts) return { kind: "failed", reason: "attempts_exhausted" };
    const atMs = nowMs + backoffMs(this.config.retryBackoffBaseMs, this.config.retryBackoffMaxMs, attempt - 1);
    return { kind: "retryScheduled", attempt: attempt + 1, atMs };
  }

  /** isTaskDrained: every call of the task has been handed out and finished, none waits for a retry. */
  isTaskDrained(taskId: string): boolean {
    const t = this.tasks.get(taskId);
    return !!t && t.sourceDone && t.inflight === 0 && t.retries.length === 0;
  }

  /** nextWakeMs is the earliest retry due, for the adapter's timer; null when none waits. */
  nextWakeMs(): number | null {
    let min: number | null = null;
    for (const t of this.retrying) {
      const r = t.retries[0];
      if (r && (min === null || r.atMs < min)) min = r.atMs;
    }
    return min;
  }

  get inflightCalls(): number {
    return this.inflight;
  }

  taskInflight(taskId: string): number {
    return this.tasks.get(taskId)?.inflight ?? 0;
  }
}
