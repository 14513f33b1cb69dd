import { taskIdProblem } from "../../common/task-id";
import { ErrorCode } from "../../common/error-code";
import { DeadlineHeap } from "../../common/deadline-heap";
import { type TaskSnapshot, TaskPhase, TaskState } from "../../gen/worker/v1/worker";
import {
  DEFAULT_MAX_SLOT_TTL_MS,
  DEFAULT_RETAINED_BYTES_MAX,
  DEFAULT_RETAINED_TASKS_MAX,
  DEFAULT_TASK_TIMEOUT_MS,
  MAX_CANCEL_REASON_CHARS,
  MAX_SLOT_TTL_MS,
  MAX_TASK_TIMEOUT_MS,
  validateWorkerCoreConfig,
  type WorkerCoreConfig,
} from "./config";
import { formatSlotId, INCARNATION_PATTERN, parseSlotId } from "./slot-id";
import {
  assertTransition,
  holdsSlot,
  isTerminal,
  PHASE_TRANSITIONS,
  type TaskLifeState,
  type TaskPhaseName,
  type TaskStateName,
  type TerminalStateName,
} from "./task-transitions";
import {
  ANONYMOUS,
  type Requester,
  type TaskCallCountsChanged,
  type TaskCancelRequested,
  type TaskFailed,
  type TaskPhaseEntered,
  type TaskQueried,
  type TaskRetainedSizeKnown,
  type TaskSlotRequested,
  type TaskSpec,
  type TaskSubmitted,
  type WorkerEvent,
} from "./worker-core-events";
import type {
  IgnoredEvent,
  IgnoreReason,
  ReplyOf,
  SnapshotReply,
  WorkerDecision,
  WorkerInstruction,
} from "./worker-core-instructions";
import { WorkerError } from "./worker-error";

/** The task-level error codes WorkerCore itself writes into a snapshot's `error.code`. */
export const TaskEndCode = {
  TimedOut: "TIMED_OUT",
  Cancelled: "CANCELLED",
} as const;

/** STORY_LIMIT is how many entries of its story a task keeps (the oldest go first). */
export const STORY_LIMIT = 32;

/** StoryEntry is one line of a task's history: what happened at `atMs`, and what the core decided. */
export interface StoryEntry {
  readonly atMs: number;
  /** The event type, or what became due: slotExpired, taskTimedOut. */
  readonly event: string;
  readonly outcome: string;
}

/** SlotCounts is what the heartbeat reports about the slot table. */
export interface SlotCounts {
  readonly taskSlots: number;
  /** Slots ALLOCATED to a task id and waiting for SubmitTask. */
  readonly reservedSlots: number;
  /** Slots whose task is RUNNING. */
  readonly runningTasks: number;
  /** taskSlots - reservedSlots - runningTasks. */
  readonly freeSlots: number;
  /** Terminal tasks kept for retention (they hold no slot). */
  readonly retainedTasks: number;
}

export const STATE_TO_PROTO: Readonly<Record<TaskStateName, TaskState>> = {
  ALLOCATED: TaskState.ALLOCATED,
  RUNNING: TaskState.RUNNING,
  SUCCEEDED: TaskState.SUCCEEDED,
  FAILED: TaskState.FAILED,
  TIMED_OUT: TaskState.TIMED_OUT,
  CANCELLED: TaskState.CANCELLED,
};

const PHASE_TO_PROTO: Readonly<Record<TaskPhaseName, TaskPhase>> = {
  BUILD: TaskPhase.BUILD,
  EXECUTE: TaskPhase.EXECUTE,
  WRITE: TaskPhase.WRITE,
};

/**
 * TaskRecord is one life of one task id: from the slot allocation (or the inline allocation of a
 * slot-less SubmitTask) until it is forgotten. A life binds exactly one slot, so `slotId` never
 * changes; after the record is forgotten the task id may start a new life with a new slot.
 */
class TaskRecord {
  state: TaskLifeState = "NEW";
  phase: TaskPhaseName | null = null;
  callsTotal = 0;
  callsSucceeded = 0;
  callsFailed = 0;
  callsRetried = 0;
  error: { code: string; message: string } | undefined = undefined;
  acceptedAtMs = 0;
  finishedAtMs = 0;
  updatedAtMs: number;
  /** The effective task timeout, set at acceptance (0 while ALLOCATED). */
  timeoutMs = 0;
  /**
   * While ALLOCATED: when the slot expires. From acceptance on: the task deadline
   * (acceptedAtMs + timeoutMs), kept in terminal snapshots for reference. 0 for a task cancelled
   * before acceptance.
   */
  deadlineMs: number;
  /** When a terminal record is forgotten (finishedAtMs + retentionMs); 0 before. */
  forgetAtMs = 0;
  readonly story: StoryEntry[] = [];

  constructor(
    readonly taskId: string,
    readonly slotId: string,
    readonly allocatedAtMs: number,
    deadlineMs: number,
    /** The identity key that reserved or submitted the task ("" = anonymous); it owns the task. */
    readonly owner: string,
  ) {
    this.updatedAtMs = allocatedAtMs;
    this.deadlineMs = deadlineMs;
  }

  /** dueAtMs is the one time at which the core must act on this record next. */
  dueAtMs(): number {
    return holdsSlot(this.state) ? this.deadlineMs : this.forgetAtMs;
  }
}

/** Internal result of a step: the reply (for client requests) and why the event was ignored, if it was. */
interface StepResult {
  reply: SnapshotReply | undefined;
  ignored: IgnoredEvent | undefined;
}

const NOTHING: StepResult = { reply: undefined, ignored: undefined };

/**
 * WorkerCore is the Worker's Sans-IO slot table and task state machine. It never reads a clock,
 * never does IO and never logs: every step takes `nowMs`, and returns the reply to a client's
 * request, the instructions the adapter must carry out (start or stop a task, publish a snapshot,
 * forget a task, report drained) and, when the event changed nothing, why. It is not re-entrant;
 * the adapter serialises calls, which also makes the capacity check atomic: concurrent
 * RequestTaskSlots never over-allocate.
 *
 * One doorway mutates it: `handle(event, nowMs)` (see WorkerEvent). `requestTaskSlot`,
 * `submitTask`, `cancelTask`, `queryTask`, `tick` and `startDraining` are typed shorthands for it.
 * Queries (`slotCounts`, `snapshotOf`, `story`, `nextDeadlineMs`, ...) change nothing that matters.
 *
 * ## Slots
 *
 * There are `taskSlots` slots. A slot is FREE, ALLOCATED (bound to a task id, reclaimed at
 * `allocatedAt + ttlMs` unless SubmitTask comes first or a repeated request extends it) or RUNNING
 * (its task is RUNNING). It is freed the moment its task becomes terminal, independent of result
 * retention. Every allocation gets a new id `${incarnation}.${counter}`; ids are never reused, and
 * ids of an earlier incarnation are recognised and rejected.
 *
 * ## Time
 *
 * Every step first applies everything that became due by `nowMs`, in deadline order, each at its
 * own deadline: an ALLOCATED slot expires at `allocatedAtMs + ttl` (exactly at the boundary: a
 * SubmitTask at that very millisecond is too late), a RUNNING task times out at
 * `acceptedAtMs + timeoutMs` (its finishedAtMs is the deadline, and a taskSucceeded reported at or
 * after the deadline is ignored), and a terminal task is forgotten at `finishedAtMs + retentionMs`.
 * So the state depends only on the events and their times, never on when the adapter's timer
 * fires; `tick(nowMs)` at `nextDeadlineMs()` merely hands out the instructions sooner.
 *
 * `nowMs` is used both for deadlines and for the snapshot timestamps, so the adapter should pass a
 * monotonic clock in epoch milliseconds (`performance.timeOrigin + performance.now()`). A `nowMs`
 * below an earlier one is treated as the earlier one: time inside the core never goes back.
 *
 * Expiries cost O(log n) each: every record has exactly one pending deadline (dueAtMs), kept in a
 * min-heap with lazy deletion (an entry whose record moved on is skipped when it surfaces), so ten
 * thousand retained tasks cost nothing per step.
 */
export class WorkerCore {
  /** The token in every slot id of this process; random per start (chosen by the adapter). */
  readonly incarnation: string;
  private readonly config: WorkerCoreConfig;
  /** Every task id the core knows: ALLOCATED, RUNNING and retained terminal tasks. */
  private readonly tasks = new Map<string, TaskRecord>();
  /** The slots in use (ALLOCATED or RUNNING) by slot id; FREE slots are simply absent. */
  private readonly slots = new Map<string, TaskRecord>();
  private readonly heap = new DeadlineHeap<TaskRecord>();
  /** The counter of the last slot id issued. */
  private slotCounter = 0;
  private reservedSlots = 0;
  private runningTasks = 0;
  private draining = false;
  private drainedReported = false;
  /** The latest `nowMs` seen; every due item up to it has been applied. */
  private nowMs = Number.NEGATIVE_INFINITY;
  private readonly maxSlotTtlMs: number;
  /**
   * The ended tasks still kept, in the order they ended (a Map keeps insertion order), with the
   * bytes each keeps (0 until taskRetainedSizeKnown): the oldest is forgotten first when they
   * number more than retainedTasksMax or keep more than retainedBytesMax together.
   */
  private readonly retained = new Map<string, number>();
  private retainedBytes = 0;
  private readonly retainedTasksMax: number;
  private readonly retainedBytesMax: number;

  /**
   * The constructor checks the config and the incarnation (INCARNATION_PATTERN: letters, digits,
   * `_`, `-`; the adapter makes it random, e.g. 12 base-36 characters) and throws on either.
   */
  constructor(config: WorkerCoreConfig, incarnation: string) {
    const problems = validateWorkerCoreConfig(config);
    if (!INCARNATION_PATTERN.test(incarnation)) {
      problems.push(`incarnation: expected 1..64 characters of [A-Za-z0-9_-], got ${JSON.stringify(incarnation)}`);
    }
    if (problems.length > 0) throw new Error(`invalid WorkerCore config: ${problems.join("; ")}`);
    this.config = Object.freeze({ ...config });
    this.maxSlotTtlMs = config.maxSlotTtlMs ?? DEFAULT_MAX_SLOT_TTL_MS;
    this.retainedTasksMax = config.retainedTasksMax ?? DEFAULT_RETAINED_TASKS_MAX;
    this.retainedBytesMax = config.retainedBytesMax ?? DEFAULT_RETAINED_BYTES_MAX;
    this.incarnation = incarnation;
  }

  // ---------------------------------------------------------------- the doorway

  /**
   * handle applies one event at `nowMs`: first everything that became due by then, then the event.
   * The reply is a SnapshotReply for client requests (RpcEventType) and undefined otherwise.
   * Throws only when the adapter misuses the core (a non-finite `nowMs`, malformed progress
   * counts, an empty failure code) or on an internal bug (IllegalTransitionError); a client's bad
   * request is a WorkerError reply, never a throw.
   */
  handle<E extends WorkerEvent>(event: E, nowMs: number): WorkerDecision<ReplyOf<E>> {
    if (!Number.isFinite(nowMs)) throw new TypeError(`WorkerCore.handle: nowMs must be a finite number, got ${nowMs}`);
    // Misuse is refused before anything changes, so a throw never loses the instructions of due expiries.
    assertWellFormed(event);
    const now = nowMs > this.nowMs ? nowMs : this.nowMs;
    this.nowMs = now;
    const out: WorkerInstruction[] = [];
    this.applyDue(now, out);
    const result = this.step(event, now, out);
    this.maybeReportDrained(out);
    const decision: WorkerDecision = { reply: result.reply, instructions: out, wakeAtMs: this.nextDeadlineMs(), ...(result.ignored ? { note: result.ignored } : {}) };
    return decision as WorkerDecision<ReplyOf<E>>;
  }

  // ---------------------------------------------------------------- shorthands

  /**
   * requestTaskSlot (RequestTaskSlot) binds a FREE slot to `taskId` for `ttlMs` and replies with
   * the ALLOCATED snapshot. It is idempotent by task id, which makes the Coordinator's same-Worker
   * retry safe: a task that already holds an ALLOCATED slot gets that same slot back, its expiry
   * extended to max(current expiry, now + ttlMs) (the retry proves the client is alive, and the
   * client counts the TTL from the reply it finally got); a RUNNING or retained task gets its
   * snapshot with the slot id it holds or held, never an empty one, so the client's SubmitTask
   * becomes an idempotent hit. Both work while draining, since neither takes a new slot.
   *
   * Errors: INVALID_ARGUMENT (empty task_id, ttl_ms not an integer in 1..MAX_SLOT_TTL_MS),
   * NO_SLOT (draining, or every slot is in use).
   */
  requestTaskSlot(taskId: string, ttlMs: number, nowMs: number): WorkerDecision<SnapshotReply> {
    return this.handle({ type: "taskSlotRequested", taskId, ttlMs } as TaskSlotRequested, nowMs);
  }

  /**
   * submitTask (SubmitTask) accepts a task and replies with its RUNNING snapshot (phase BUILD);
   * the decision carries the one `startTask` this task will ever get (in this life). The timeout,
   * 0 meaning DEFAULT_TASK_TIMEOUT_MS, counts from now.
   *
   * Idempotent by task id within retention: if the task is RUNNING or retained, the reply is its
   * current snapshot and nothing starts, whatever `slotId` says (and whatever timeout).
   *
   * With a `slotId`, the slot must be a live slot of this incarnation (else SLOT_NOT_FOUND, with a
   * message that tells an earlier incarnation from an expired or released slot and from an id this
   * Worker never issued) bound to this task (else SLOT_CONFLICT). Without one (`""`), the task's own
   * ALLOCATED slot is used if it has one; otherwise a slot is allocated inline (NO_SLOT when
   * draining, NO_SLOT when full). Submitting into an existing ALLOCATED slot works while draining.
   *
   * Errors also: INVALID_ARGUMENT (empty task.task_id, task_timeout_ms not an integer in
   * 0..MAX_TASK_TIMEOUT_MS).
   */
  submitTask(task: TaskSpec, slotId: string, nowMs: number): WorkerDecision<SnapshotReply> {
    return this.handle({ type: "taskSubmitted", task, slotId } as TaskSubmitted, nowMs);
  }

  /**
   * wouldStart says, without changing anything, whether a SubmitTask of `taskId` into `slotId` by
   * `requester` would start a task now (the checks of taskSubmitted but the id's and timeout's):
   * false when it would be an idempotent hit, a refusal, or a slot-less submit with no slot free.
   * The driver asks before it claims a table task's run in the table store, so that a submission
   * the core will refuse never claims (or takes over) a run. Apply due expiries first.
   */
  wouldStart(taskId: string, slotId: string, requester: Requester): boolean {
    const rec = this.tasks.get(taskId);
    if (rec !== undefined && (rec.owner !== requester.identity || rec.state !== "ALLOCATED")) return false;
    if (slotId === "") return rec !== undefined || (!this.draining && this.slots.size < this.config.taskSlots);
    return this.slots.get(slotId)?.taskId === taskId;
  }

  /** ownerOf: the identity key that owns the task ("" = anonymous), undefined for a task not known here. */
  ownerOf(taskId: string): string | undefined {
    return this.tasks.get(taskId)?.owner;
  }

  /**
   * cancelTask (CancelTask) makes an ALLOCATED or RUNNING task CANCELLED, frees its slot at once
   * and, if it had been started, emits `stopTask`. Cancelling a terminal task changes nothing and
   * replies with its final snapshot. Errors: INVALID_ARGUMENT (empty task_id), SLOT_NOT_FOUND
   * (unknown task: never seen here, or forgotten).
   */
  cancelTask(taskId: string, reason: string, nowMs: number): WorkerDecision<SnapshotReply> {
    return this.handle({ type: "taskCancelRequested", taskId, reason } as TaskCancelRequested, nowMs);
  }

  /**
   * queryTask (GetTaskResult, the first message of WatchTasks) replies with the task's snapshot as
   * of `nowMs`. Errors: INVALID_ARGUMENT (empty task_id), SLOT_NOT_FOUND (unknown task).
   */
  queryTask(taskId: string, nowMs: number): WorkerDecision<SnapshotReply> {
    return this.handle({ type: "taskQueried", taskId } as TaskQueried, nowMs);
  }

  /** tick applies everything due by `nowMs` (call it at `nextDeadlineMs()`). */
  tick(nowMs: number): WorkerDecision<undefined> {
    return this.handle({ type: "timeAdvanced" }, nowMs);
  }

  /**
   * startDraining stops handing out new slots, for good: RequestTaskSlot for a new task and a
   * slot-less SubmitTask that would need a new slot get NO_SLOT; SubmitTask into an existing
   * ALLOCATED slot is still accepted and RUNNING tasks go on. Once no slot is in use, the decision
   * of that step carries `reportDrained` (possibly this one). Idempotent.
   */
  startDraining(nowMs: number): WorkerDecision<undefined> {
    return this.handle({ type: "drainingStarted" }, nowMs);
  }

  // ---------------------------------------------------------------- queries

  /** slotCounts is what the heartbeat reports (as of the last step). */
  slotCounts(): SlotCounts {
    const used = this.reservedSlots + this.runningTasks;
    return {
      taskSlots: this.config.taskSlots,
      reservedSlots: this.reservedSlots,
      runningTasks: this.runningTasks,
      freeSlots: this.config.taskSlots - used,
      retainedTasks: this.tasks.size - used,
    };
  }

  isDraining(): boolean {
    return this.draining;
  }

  /**
   * snapshotOf returns a task's snapshot as of the last step, or undefined for an unknown task. It
   * does not apply due expiries; to answer a client, use queryTask, which does.
   */
  snapshotOf(taskId: string): TaskSnapshot | undefined {
    const rec = this.tasks.get(taskId);
    return rec === undefined ? undefined : this.snapshot(rec);
  }

  /** snapshots: every task the core knows (ALLOCATED, RUNNING and retained) as of the last step. */
  snapshots(): TaskSnapshot[] {
    return [...this.tasks.values()].map((rec) => this.snapshot(rec));
  }

  /** taskCount is the number of task ids the core knows (ALLOCATED, RUNNING and retained). */
  taskCount(): number {
    return this.tasks.size;
  }

  /** story returns a copy of the last STORY_LIMIT entries of a known task's history ([] if unknown). */
  story(taskId: string): StoryEntry[] {
    return [...(this.tasks.get(taskId)?.story ?? [])];
  }

  /**
   * nextDeadlineMs is the earliest time at which something becomes due (a slot expiry, a task
   * deadline or a retention expiry), or null when nothing is pending: the adapter arms one timer for
   * it and calls tick. It drops superseded heap entries from the top as it looks; that is
   * bookkeeping, not a state change.
   */
  nextDeadlineMs(): number | null {
    const heap = this.heap;
    // The adapter asks after every step: a live head answers in O(1); stale heads are dropped.
    while (heap.size > 0) {
      const d = heap.peekDeadline();
      if (this.isLiveEntry(d, heap.peekItem() as TaskRecord)) return d;
      heap.pop();
    }
    return null;
  }

  /**
   * validateState checks every invariant and throws an Error listing the broken ones. O(n): for
   * tests, which call it after every step.
   */
  validateState(): void {
    const problems: string[] = [];
    const cfg = this.config;
    const heapDeadlines = new Map<TaskRecord, number[]>();
    for (const [d, rec] of this.heap.entries()) {
      const list = heapDeadlines.get(rec);
      if (list === undefined) heapDeadlines.set(rec, [d]);
      else list.push(d);
    }
    // The retained list is exactly the ended records, and its byte sum is the counter, within both bounds (the last ended aside).
    const ended = [...this.tasks.values()].filter((r) => isTerminal(r.state)).map((r) => r.taskId);
    if (ended.length !== this.retained.size || ended.some((id) => !this.retained.has(id))) problems.push(`retained list (${this.retained.size}) is not the ${ended.length} ended tasks`);
    const sum = [...this.retained.values()].reduce((a, b) => a + b, 0);
    if (sum !== this.retainedBytes) problems.push(`retained bytes counted ${this.retainedBytes}, kept ${sum}`);
    if (this.retained.size > 1 && (this.retained.size > this.retainedTasksMax || this.retainedBytes > this.retainedBytesMax)) problems.push(`${this.retained.size} ended tasks keep ${this.retainedBytes} bytes: over the bounds`);
    let allocated = 0;
    let running = 0;
    for (const [taskId, rec] of this.tasks) {
      const name = `task ${JSON.stringify(taskId)} (${rec.state})`;
      if (rec.taskId !== taskId) problems.push(`${name}: stored under another task id (${rec.taskId})`);
      if (rec.state === "NEW" || rec.state === "FORGOTTEN") problems.push(`${name}: a ${rec.state} record is in the task map`);
      const parsed = parseSlotId(rec.slotId);
      if (parsed === null || parsed.incarnation !== this.incarnation || parsed.counter > this.slotCounter) {
        problems.push(`${name}: slot id ${rec.slotId} was not issued by this incarnation`);
      }
      if (holdsSlot(rec.state)) {
        if (this.slots.get(rec.slotId) !== rec) problems.push(`${name}: holds slot ${rec.slotId}, which is not in the slot table`);
      } else if (this.slots.get(rec.slotId) === rec) {
        problems.push(`${name}: terminal but still in the slot table as ${rec.slotId}`);
      }
      if (rec.state === "ALLOCATED") {
        allocated++;
        if (rec.phase !== null || rec.timeoutMs !== 0 || rec.acceptedAtMs !== 0) problems.push(`${name}: has task fields before acceptance`);
        if (rec.deadlineMs <= rec.allocatedAtMs) problems.push(`${name}: slot expiry ${rec.deadlineMs} is not after allocation`);
      } else {
        if (rec.state === "RUNNING") running++;
        if (rec.phase === null && (rec.state === "RUNNING" || rec.acceptedAtMs !== 0 || rec.timeoutMs !== 0)) {
          problems.push(`${name}: accepted but has no phase`);
        }
        if (rec.phase !== null) {
          if (!(rec.timeoutMs >= 1 && rec.timeoutMs <= MAX_TASK_TIMEOUT_MS)) problems.push(`${name}: timeout ${rec.timeoutMs} out of range`);
          if (rec.deadlineMs !== rec.acceptedAtMs + rec.timeoutMs) problems.push(`${name}: deadline is not acceptance + timeout`);
          if (rec.acceptedAtMs < rec.allocatedAtMs) problems.push(`${name}: accepted before allocation`);
        }
      }
      if (isTerminal(rec.state)) {
        if (rec.forgetAtMs !== rec.finishedAtMs + cfg.retentionMs) problems.push(`${name}: forgetAt is not finishedAt + retention`);
        if ((rec.state === "SUCCEEDED") !== (rec.error === undefined)) problems.push(`${name}: error ${JSON.stringify(rec.error)}`);
        if (rec.phase === null && (rec.state !== "CANCELLED" || rec.deadlineMs !== 0)) {
          problems.push(`${name}: finished without being accepted, deadline ${rec.deadlineMs}`);
        }
      } else if (rec.finishedAtMs !== 0 || rec.forgetAtMs !== 0 || rec.error !== undefined) {
        problems.push(`${name}: has terminal fields while ${rec.state}`);
      }
      const counts = [rec.callsTotal, rec.callsSucceeded, rec.callsFailed, rec.callsRetried];
      if (!counts.every((c) => Number.isSafeInteger(c) && c >= 0) || rec.callsSucceeded + rec.callsFailed > rec.callsTotal) {
        problems.push(`${name}: bad call counts ${counts.join("/")}`);
      }
      if (rec.updatedAtMs < rec.allocatedAtMs || rec.updatedAtMs > this.nowMs) problems.push(`${name}: updatedAtMs ${rec.updatedAtMs} out of range`);
      const due = rec.dueAtMs();
      if (!(heapDeadlines.get(rec) ?? []).includes(due)) problems.push(`${name}: its due time ${due} is not in the heap`);
      if (due <= this.nowMs) problems.push(`${name}: due at ${due} but time is already ${this.nowMs}`);
      if (rec.story.length > STORY_LIMIT) problems.push(`${name}: story of ${rec.story.length} entries`);
    }
    for (const [slotId, rec] of this.slots) {
      if (rec.slotId !== slotId) problems.push(`slot ${slotId}: holds the record of slot ${rec.slotId}`);
      if (this.tasks.get(rec.taskId) !== rec) problems.push(`slot ${slotId}: its task ${JSON.stringify(rec.taskId)} is not in the task map`);
      if (!holdsSlot(rec.state)) problems.push(`slot ${slotId}: its task is ${rec.state}`);
    }
    if (allocated !== this.reservedSlots) problems.push(`reservedSlots is ${this.reservedSlots}, actual ${allocated}`);
    if (running !== this.runningTasks) problems.push(`runningTasks is ${this.runningTasks}, actual ${running}`);
    if (this.slots.size !== allocated + running) problems.push(`the slot table holds ${this.slots.size}, tasks hold ${allocated + running}`);
    if (this.slots.size > cfg.taskSlots) problems.push(`${this.slots.size} slots in use, more than taskSlots ${cfg.taskSlots}`);
    if (this.drainedReported && (!this.draining || this.slots.size > 0)) problems.push("drained reported while slots are in use");
    if (problems.length > 0) throw new Error(`WorkerCore state is inconsistent:\n  ${problems.join("\n  ")}`);
  }

  // ---------------------------------------------------------------- steps

  private step(event: WorkerEvent, now: number, out: WorkerInstruction[]): StepResult {
    switch (event.type) {
      case "taskSlotRequested":
        return this.onSlotRequested(event, now, out);
      case "taskSubmitted":
        return this.onSubmitted(event, now, out);
      case "taskCancelRequested":
        return this.onCancelRequested(event, now, out);
      case "taskQueried":
        return this.onQueried(event);
      case "taskPhaseEntered":
        return this.onPhaseEntered(event, now, out);
      case "taskCallCountsChanged":
        return this.onCallCountsChanged(event, now, out);
      case "taskSucceeded":
        return this.onOutcome(event.taskId, event.type, undefined, now, out);
      case "taskFailed":
        return this.onFailed(event, now, out);
      case "taskRetainedSizeKnown":
        return this.onRetainedSizeKnown(event, now, out);
      case "drainingStarted":
        this.draining = true;
        return NOTHING;
      case "timeAdvanced":
        return NOTHING;
      default: {
        const never: never = event;
        throw new TypeError(`WorkerCore.handle: unknown event ${JSON.stringify(never)}`);
      }
    }
  }

  private onSlotRequested(e: TaskSlotRequested, now: number, out: WorkerInstruction[]): StepResult {
    const badId = taskIdProblem(e.taskId);
    if (badId) return this.reject(ErrorCode.ErrInvalidArgument, badId);
    if (!Number.isInteger(e.ttlMs) || e.ttlMs < 1 || e.ttlMs > MAX_SLOT_TTL_MS) {
      return this.reject(ErrorCode.ErrInvalidArgument, `ttl_ms: expected an integer in 1..${MAX_SLOT_TTL_MS}, got ${e.ttlMs}`);
    }
    const requester = e.requester ?? ANONYMOUS;
    const rec = this.tasks.get(e.taskId);
    if (rec !== undefined) {
      const foreign = this.maybeRefuseForeign(rec, requester, false, "RequestTaskSlot");
      if (foreign !== null) return foreign;
      if (rec.state === "ALLOCATED") {
        // Never beyond maxSlotTtlMs from the allocation, however often the request is repeated.
        const expiresAtMs = Math.min(now + e.ttlMs, rec.allocatedAtMs + this.maxSlotTtlMs);
        if (expiresAtMs > rec.deadlineMs) {
          rec.deadlineMs = expiresAtMs;
          rec.updatedAtMs = now;
          this.schedule(rec);
          out.push(this.publish(rec));
          this.note(rec, now, e.type, `same slot returned, expiry extended to ${expiresAtMs}`);
        } else {
          this.note(rec, now, e.type, "same slot returned");
        }
      } else {
        this.note(rec, now, e.type, `task is ${rec.state}: its snapshot returned`);
      }
      return this.reply(rec);
    }
    const refusal = this.refuseNewSlot();
    if (refusal !== null) return refusal;
    const fresh = this.newRecord(e.taskId, now, now + Math.min(e.ttlMs, this.maxSlotTtlMs), requester.identity);
    this.transition(fresh, "ALLOCATED");
    this.schedule(fresh);
    out.push(this.publish(fresh));
    this.note(fresh, now, e.type, `slot ${fresh.slotId} allocated until ${fresh.deadlineMs}`);
    return this.reply(fresh);
  }

  private onSubmitted(e: TaskSubmitted, now: number, out: WorkerInstruction[]): StepResult {
    const { taskId, timeoutMs } = e.task;
    const badId = taskIdProblem(taskId, "task.task_id");
    if (badId) return this.reject(ErrorCode.ErrInvalidArgument, badId);
    if (!Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > MAX_TASK_TIMEOUT_MS) {
      return this.reject(
        ErrorCode.ErrInvalidArgument,
        `task.task_timeout_ms: expected an integer in 0..${MAX_TASK_TIMEOUT_MS} (0 = the default ${DEFAULT_TASK_TIMEOUT_MS}), got ${timeoutMs}`,
      );
    }
    const requester = e.requester ?? ANONYMOUS;
    const rec = this.tasks.get(taskId);
    // Before the idempotent hit and the slot-less path: another identity's task (reserved or
    // running) is neither taken over nor shown.
    const foreign = rec === undefined ? null : this.maybeRefuseForeign(rec, requester, false, "SubmitTask");
    if (foreign !== null) {
      this.note(rec!, now, e.type, `rejected: ${foreign.reply?.err?.rawMessage}`);
      return foreign;
    }
    if (rec !== undefined && rec.state !== "ALLOCATED") {
      this.note(rec, now, e.type, `idempotent hit on a ${rec.state} task`);
      return this.reply(rec);
    }
    let target: TaskRecord;
    if (e.slotId === "") {
      if (rec !== undefined) {
        target = rec;
      } else {
        const refusal = this.refuseNewSlot();
        if (refusal !== null) return refusal;
        target = this.newRecord(taskId, now, now, requester.identity);
      }
    } else {
      const slotRec = this.slots.get(e.slotId);
      if (slotRec === undefined || slotRec.taskId !== taskId) {
        const refusal =
          slotRec === undefined
            ? this.reject(ErrorCode.ErrSlotNotFound, this.describeMissingSlot(e.slotId))
            : this.reject(ErrorCode.ErrSlotConflict, `slot ${e.slotId} is bound to another task, not to task ${JSON.stringify(taskId)}`);
        // The task may hold another slot (a client with a stale slot id): its story says why it did not start.
        if (rec !== undefined) this.note(rec, now, e.type, `rejected: ${refusal.reply?.err?.rawMessage}`);
        return refusal;
      }
      target = slotRec;
    }
    const effectiveTimeoutMs = timeoutMs === 0 ? DEFAULT_TASK_TIMEOUT_MS : timeoutMs;
    this.transition(target, "RUNNING");
    target.phase = "BUILD";
    target.acceptedAtMs = now;
    target.timeoutMs = effectiveTimeoutMs;
    target.deadlineMs = now + effectiveTimeoutMs;
    target.updatedAtMs = now;
    this.schedule(target);
    out.push(this.publish(target), {
      type: "startTask",
      taskId,
      slotId: target.slotId,
      timeoutMs: effectiveTimeoutMs,
      deadlineMs: target.deadlineMs,
    });
    this.note(target, now, e.type, `accepted in slot ${target.slotId}, deadline ${target.deadlineMs}`);
    return this.reply(target);
  }

  private onCancelRequested(e: TaskCancelRequested, now: number, out: WorkerInstruction[]): StepResult {
    const badId = taskIdProblem(e.taskId);
    if (badId) return this.reject(ErrorCode.ErrInvalidArgument, badId);
    const rec = this.tasks.get(e.taskId);
    if (rec === undefined) return this.reject(ErrorCode.ErrSlotNotFound, unknownTask(e.taskId));
    const foreign = this.maybeRefuseForeign(rec, e.requester ?? ANONYMOUS, true, "CancelTask");
    if (foreign !== null) return foreign;
    if (isTerminal(rec.state)) {
      this.note(rec, now, e.type, `already ${rec.state}: nothing to cancel`);
      return this.reply(rec);
    }
    const reason = e.reason.length > MAX_CANCEL_REASON_CHARS ? `${e.reason.slice(0, MAX_CANCEL_REASON_CHARS)}...` : e.reason;
    const message = reason === "" ? "cancelled by the client" : `cancelled by the client: ${reason}`;
    const from = rec.state;
    this.finish(rec, "CANCELLED", now, { code: TaskEndCode.Cancelled, message }, out);
    this.note(rec, now, e.type, `cancelled while ${from}`);
    return this.reply(rec);
  }

  private onQueried(e: TaskQueried): StepResult {
    const badId = taskIdProblem(e.taskId);
    if (badId) return this.reject(ErrorCode.ErrInvalidArgument, badId);
    const rec = this.tasks.get(e.taskId);
    if (rec === undefined) return this.reject(ErrorCode.ErrSlotNotFound, unknownTask(e.taskId));
    return this.maybeRefuseForeign(rec, e.requester ?? ANONYMOUS, true, "reading it") ?? this.reply(rec);
  }

  private onPhaseEntered(e: TaskPhaseEntered, now: number, out: WorkerInstruction[]): StepResult {
    const found = this.runningRecord(e.taskId, e.type, now);
    if (!(found instanceof TaskRecord)) return found;
    const current = found.phase as TaskPhaseName;
    if (!PHASE_TRANSITIONS[current].includes(e.phase)) {
      return this.ignore(found, now, e.type, "PHASE_NOT_FORWARD", `task ${JSON.stringify(e.taskId)} is in phase ${current}; ${e.phase} is not a forward move`);
    }
    found.phase = e.phase;
    found.updatedAtMs = now;
    out.push(this.publish(found));
    this.note(found, now, e.type, `${current} -> ${e.phase}`);
    return NOTHING;
  }

  private onCallCountsChanged(e: TaskCallCountsChanged, now: number, out: WorkerInstruction[]): StepResult {
    const found = this.runningRecord(e.taskId, e.type, now);
    if (!(found instanceof TaskRecord)) return found;
    const r = found;
    if (e.callsTotal < r.callsTotal || e.callsSucceeded < r.callsSucceeded || e.callsFailed < r.callsFailed || e.callsRetried < r.callsRetried) {
      return this.ignore(r, now, e.type, "COUNTS_WENT_BACKWARDS", `task ${JSON.stringify(e.taskId)}: call counts went backwards`);
    }
    if (e.callsTotal === r.callsTotal && e.callsSucceeded === r.callsSucceeded && e.callsFailed === r.callsFailed && e.callsRetried === r.callsRetried) {
      return NOTHING;
    }
    r.callsTotal = e.callsTotal;
    r.callsSucceeded = e.callsSucceeded;
    r.callsFailed = e.callsFailed;
    r.callsRetried = e.callsRetried;
    r.updatedAtMs = now;
    out.push(this.publish(r));
    this.note(r, now, e.type, `total ${e.callsTotal}, succeeded ${e.callsSucceeded}, failed ${e.callsFailed}, retried ${e.callsRetried}`);
    return NOTHING;
  }

  private onRetainedSizeKnown(e: TaskRetainedSizeKnown, now: number, out: WorkerInstruction[]): StepResult {
    const before = this.retained.get(e.taskId);
    if (before === undefined) return NOTHING;
    this.retained.set(e.taskId, e.bytes);
    this.retainedBytes += e.bytes - before;
    this.maybeEvictRetained(now, out);
    return NOTHING;
  }

  /**
   * maybeEvictRetained forgets the oldest ended tasks while the kept ones are over either bound
   * (RETENTION_EVICTED): the Worker's memory for results and logs is bounded whatever the rate of
   * tasks. The task that ended last is kept even alone over the bytes bound (the adapter's per-task
   * bounds, TASK_MAX_RESULT_BYTES and TASK_LOG_MAX_BYTES, are checked against this one at start).
   */
  private maybeEvictRetained(now: number, out: WorkerInstruction[]): void {
    while (this.retained.size > 1 && (this.retained.size > this.retainedTasksMax || this.retainedBytes > this.retainedBytesMax)) {
      const oldest = this.retained.keys().next().value!;
      const rec = this.tasks.get(oldest);
      if (!rec) {
        this.dropRetained(oldest);
        continue;
      }
      this.note(rec, now, "retentionEvicted", `forgotten early: the Worker keeps at most ${this.retainedTasksMax} ended tasks and ${this.retainedBytesMax} bytes of their results and logs`);
      this.forget(rec, "RETENTION_EVICTED", out);
    }
  }

  private dropRetained(taskId: string): void {
    const bytes = this.retained.get(taskId);
    if (bytes === undefined) return;
    this.retained.delete(taskId);
    this.retainedBytes -= bytes;
  }

  private onFailed(e: TaskFailed, now: number, out: WorkerInstruction[]): StepResult {
    return this.onOutcome(e.taskId, e.type, { code: e.error.code, message: e.error.message }, now, out);
  }

  private onOutcome(
    taskId: string,
    eventType: string,
    error: { code: string; message: string } | undefined,
    now: number,
    out: WorkerInstruction[],
  ): StepResult {
    const found = this.runningRecord(taskId, eventType, now);
    if (!(found instanceof TaskRecord)) return found;
    this.finish(found, error === undefined ? "SUCCEEDED" : "FAILED", now, error, out);
    this.note(found, now, eventType, error === undefined ? "SUCCEEDED" : `FAILED: ${error.code}`);
    return NOTHING;
  }

  // ---------------------------------------------------------------- time

  /** applyDue applies, in deadline order and each at its deadline, everything due by `now`. */
  private applyDue(now: number, out: WorkerInstruction[]): void {
    const heap = this.heap;
    while (heap.size > 0 && heap.peekDeadline() <= now) {
      const d = heap.peekDeadline();
      const rec = heap.pop() as TaskRecord;
      if (!this.isLiveEntry(d, rec)) continue;
      if (rec.state === "ALLOCATED") {
        this.note(rec, d, "slotExpired", "slot reclaimed without SubmitTask");
        this.forget(rec, "SLOT_EXPIRED", out);
      } else if (rec.state === "RUNNING") {
        const message = `the task ran longer than its timeout of ${rec.timeoutMs} ms (counted from acceptance)`;
        this.finish(rec, "TIMED_OUT", d, { code: TaskEndCode.TimedOut, message }, out);
        this.note(rec, d, "taskTimedOut", "TIMED_OUT");
      } else {
        this.forget(rec, "RETENTION_EXPIRED", out);
      }
    }
  }

  /** isLiveEntry tells a heap entry that still stands from one its record has moved past (lazy deletion). */
  private isLiveEntry(deadlineMs: number, rec: TaskRecord): boolean {
    return this.tasks.get(rec.taskId) === rec && rec.dueAtMs() === deadlineMs;
  }

  /** schedule puts the record's current due time into the heap (older entries become stale). */
  private schedule(rec: TaskRecord): void {
    this.heap.push(rec.dueAtMs(), rec);
    // Stale entries pile up only from repeated TTL extensions; rebuild when they dominate.
    if (this.heap.size > 2 * this.tasks.size + 1024) {
      this.heap.clear();
      for (const r of this.tasks.values()) this.heap.push(r.dueAtMs(), r);
    }
  }

  // ---------------------------------------------------------------- moves

  private newRecord(taskId: string, now: number, slotExpiresAtMs: number, owner: string): TaskRecord {
    this.slotCounter += 1;
    return new TaskRecord(taskId, formatSlotId(this.incarnation, this.slotCounter), now, slotExpiresAtMs, owner);
  }

  /**
   * maybeRefuseForeign: PERMISSION_DENIED when `rec` belongs to another identity than the
   * requester's (an admin passes when `adminMay`, i.e. for reads and cancels); null otherwise.
   * The one ownership check of every request that names a task.
   */
  private maybeRefuseForeign(rec: TaskRecord, requester: Requester, adminMay: boolean, what: string): StepResult | null {
    if (rec.owner === requester.identity || (adminMay && requester.admin)) return null;
    return this.reject(ErrorCode.ErrPermissionDenied, `task ${JSON.stringify(rec.taskId)} belongs to another identity: ${what} refused`);
  }

  /**
   * transition is the only place a record changes state: it checks TASK_TRANSITIONS and keeps the
   * task map, the slot table and the two counters in step with the move.
   */
  private transition(rec: TaskRecord, to: TaskLifeState): void {
    const from = rec.state;
    assertTransition(rec.taskId, from, to);
    if (!holdsSlot(from) && holdsSlot(to)) {
      if (this.slots.size >= this.config.taskSlots) {
        throw new WorkerError(ErrorCode.ErrInternal, `task ${JSON.stringify(rec.taskId)} would take a slot beyond taskSlots`);
      }
      this.slots.set(rec.slotId, rec);
    } else if (holdsSlot(from) && !holdsSlot(to)) {
      this.slots.delete(rec.slotId);
    }
    if (from === "ALLOCATED") this.reservedSlots--;
    else if (from === "RUNNING") this.runningTasks--;
    if (to === "ALLOCATED") this.reservedSlots++;
    else if (to === "RUNNING") this.runningTasks++;
    if (from === "NEW") this.tasks.set(rec.taskId, rec);
    if (to === "FORGOTTEN") this.tasks.delete(rec.taskId);
    rec.state = to;
  }

  /** finish moves a task into a terminal state at `atMs`: its slot is freed, its retention starts. */
  private finish(
    rec: TaskRecord,
    to: TerminalStateName,
    atMs: number,
    error: { code: string; message: string } | undefined,
    out: WorkerInstruction[],
  ): void {
    const wasRunning = rec.state === "RUNNING";
    this.transition(rec, to);
    // A task cancelled before acceptance never had a task deadline; its slot expiry means nothing now.
    if (!wasRunning) rec.deadlineMs = 0;
    rec.error = error;
    rec.finishedAtMs = atMs;
    rec.updatedAtMs = atMs;
    rec.forgetAtMs = atMs + this.config.retentionMs;
    this.schedule(rec);
    out.push(this.publish(rec));
    if (wasRunning && (to === "CANCELLED" || to === "TIMED_OUT")) {
      out.push({ type: "stopTask", taskId: rec.taskId, slotId: rec.slotId, reason: to, message: error?.message ?? "" });
    }
    // Kept from now on: the oldest ended go first when the kept ones are over the Worker's bounds.
    this.dropRetained(rec.taskId);
    this.retained.set(rec.taskId, 0);
    this.maybeEvictRetained(atMs, out);
  }

  private forget(rec: TaskRecord, reason: "SLOT_EXPIRED" | "RETENTION_EXPIRED" | "RETENTION_EVICTED", out: WorkerInstruction[]): void {
    this.dropRetained(rec.taskId);
    this.transition(rec, "FORGOTTEN");
    out.push({ type: "forgetTask", taskId: rec.taskId, slotId: rec.slotId, reason });
  }

  private maybeReportDrained(out: WorkerInstruction[]): void {
    if (this.draining && !this.drainedReported && this.slots.size === 0) {
      this.drainedReported = true;
      out.push({ type: "reportDrained" });
    }
  }

  // ---------------------------------------------------------------- helpers

  /** refuseNewSlot is the error for a request that needs a new slot now, or null if one is free. */
  private refuseNewSlot(): StepResult | null {
    // NO_SLOT, not UNAVAILABLE: the Coordinator reads it as backpressure and moves on to the next
    // Worker at once, while an UNAVAILABLE would look uncertain and be retried here.
    if (this.draining) return this.reject(ErrorCode.ErrNoSlot, "worker is draining: it takes no new slots");
    if (this.slots.size >= this.config.taskSlots) {
      return this.reject(
        ErrorCode.ErrNoSlot,
        `all ${this.config.taskSlots} task slots are in use (${this.reservedSlots} allocated, ${this.runningTasks} running)`,
      );
    }
    return null;
  }

  /** describeMissingSlot explains why a slot id that is not in the slot table was not found. */
  private describeMissingSlot(slotId: string): string {
    const parsed = parseSlotId(slotId);
    if (parsed === null) return `slot ${JSON.stringify(slotId)} is not a slot id issued by this worker`;
    if (parsed.incarnation !== this.incarnation) {
      return `slot ${slotId} is from an earlier incarnation of this worker (it restarted since; current incarnation ${this.incarnation})`;
    }
    if (parsed.counter > this.slotCounter) return `slot ${slotId} was never issued by this worker`;
    return `slot ${slotId} is no longer allocated: its TTL expired without SubmitTask, or it was released`;
  }

  /** runningRecord finds the RUNNING task a pipeline report is about, or says why the report is ignored. */
  private runningRecord(taskId: string, eventType: string, now: number): TaskRecord | StepResult {
    const rec = this.tasks.get(taskId);
    if (rec === undefined) {
      return { reply: undefined, ignored: { reason: "UNKNOWN_TASK", message: unknownTask(taskId) } };
    }
    if (rec.state === "RUNNING") return rec;
    if (rec.state === "ALLOCATED") {
      return this.ignore(rec, now, eventType, "TASK_NOT_STARTED", `task ${JSON.stringify(taskId)} is ALLOCATED and was never started`);
    }
    return this.ignore(rec, now, eventType, "TASK_ALREADY_TERMINAL", `task ${JSON.stringify(taskId)} is already ${rec.state}`);
  }

  private ignore(rec: TaskRecord, now: number, eventType: string, reason: IgnoreReason, message: string): StepResult {
    this.note(rec, now, eventType, `ignored (${reason})`);
    return { reply: undefined, ignored: { reason, message } };
  }

  private reject(code: ErrorCode, message: string): StepResult {
    return { reply: { err: new WorkerError(code, message) }, ignored: undefined };
  }

  private reply(rec: TaskRecord): StepResult {
    return { reply: { snapshot: this.snapshot(rec) }, ignored: undefined };
  }

  private publish(rec: TaskRecord): WorkerInstruction {
    return { type: "publishSnapshot", snapshot: this.snapshot(rec) };
  }

  private snapshot(rec: TaskRecord): TaskSnapshot {
    const state = rec.state;
    if (state === "NEW" || state === "FORGOTTEN") {
      throw new WorkerError(ErrorCode.ErrInternal, `no snapshot of a ${state} task ${JSON.stringify(rec.taskId)}`);
    }
    return {
      taskId: rec.taskId,
      slotId: rec.slotId,
      workerAddr: this.config.workerAddr,
      state: STATE_TO_PROTO[state],
      phase: rec.phase === null ? TaskPhase.TASK_PHASE_UNSPECIFIED : PHASE_TO_PROTO[rec.phase],
      callsTotal: rec.callsTotal,
      callsSucceeded: rec.callsSucceeded,
      callsFailed: rec.callsFailed,
      error: rec.error === undefined ? undefined : { code: rec.error.code, message: rec.error.message },
      allocatedAtMs: rec.allocatedAtMs,
      acceptedAtMs: rec.acceptedAtMs,
      finishedAtMs: rec.finishedAtMs,
      updatedAtMs: rec.updatedAtMs,
      callsRetried: rec.callsRetried,
      deadlineMs: rec.deadlineMs,
      // A task's outputs are the runner's, added by the service to a watch that asks for them.
      outputs: undefined,
      // The run's generation is the runner's (fencing), added by the driver.
      runGeneration: 0,
    };
  }

  /** note appends to the task's bounded story; consecutive count updates share one entry. */
  private note(rec: TaskRecord, atMs: number, event: string, outcome: string): void {
    const story = rec.story;
    const last = story[story.length - 1];
    const coalesce =
      last !== undefined && event === "taskCallCountsChanged" && last.event === event && !outcome.startsWith("ignored") && !last.outcome.startsWith("ignored");
    if (coalesce) {
      story[story.length - 1] = { atMs, event, outcome };
      return;
    }
    story.push({ atMs, event, outcome });
    if (story.length > STORY_LIMIT) story.shift();
  }
}

/**
 * assertWellFormed throws a WorkerError (INTERNAL) for a pipeline report the adapter should never
 * send: an unknown phase, impossible call counts, a failure without a code. Client requests are
 * never refused here; their problems are replies.
 */
function assertWellFormed(e: WorkerEvent): void {
  if (e.type === "taskPhaseEntered" && !Object.hasOwn(PHASE_TRANSITIONS, e.phase)) {
    throw new WorkerError(ErrorCode.ErrInternal, `taskPhaseEntered: unknown phase ${JSON.stringify(e.phase)}`);
  }
  if (e.type === "taskCallCountsChanged") {
    const counts = [e.callsTotal, e.callsSucceeded, e.callsFailed, e.callsRetried];
    if (!counts.every((c) => Number.isSafeInteger(c) && c >= 0) || e.callsSucceeded + e.callsFailed > e.callsTotal) {
      throw new WorkerError(
        ErrorCode.ErrInternal,
        `taskCallCountsChanged: counts must be integers >= 0 with succeeded + failed <= total, got total ${e.callsTotal}, ` +
          `succeeded ${e.callsSucceeded}, failed ${e.callsFailed}, retried ${e.callsRetried}`,
      );
    }
  }
  if (e.type === "taskFailed" && (typeof e.error?.code !== "string" || e.error.code === "" || typeof e.error.message !== "string")) {
    throw new WorkerError(ErrorCode.ErrInternal, "taskFailed: error.code must be a non-empty string and error.message a string");
  }
}

function unknownTask(taskId: string): string {
  return `unknown task ${JSON.stringify(taskId)}: never seen by this worker, or forgotten after its retention`;
}
