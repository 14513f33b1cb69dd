import type { Logger } from "../../common/logging/logger";
import type { NowMs } from "../../common/clock/monotonic-clock";
import type { CallError, TableWriteSummary } from "../../gen/worker/v1/worker";
import { CallErrorCode, type CallOutcome, type CallOwner, type PrefetchedAnswer } from "../../runtime/calls/call";
import { createCallOwner, resumeResultOf, type CallPool, type RunSubCall } from "../../runtime/calls/call-owner";
import type { SuspensionRequest } from "../../runtime/executor/protocol";
import type { JsonValue } from "../../runtime/json/raw-json";
import { executorOwnerKey } from "../../runtime/executor/executor-pool-config";
import type { TaskIo } from "../../runtime/io/io-subsystem";
import { IoPrefetchPlan } from "../core/io-prefetch-plan";
import { DispatcherCore, type CallDecision, type CallResult, type DispatchedCall, type DispatcherConfig, type DispatcherEvent, type DispatcherInstruction } from "../core/dispatcher-core";
import { CoreDriver } from "../../common/core/core-driver";
import { TaskLogBook, type TaskLogCaps, type TaskLogEntry } from "../core/task-log-book";
import type { TaskPlan } from "../core/task-plan";
import type { WorkerEvent } from "../core/worker-core-events";
import type { TableStore } from "../../outputs/stores/table-store";
import type { RunFence } from "../../outputs/stores/run-fence";
import { writerOf } from "../../outputs/stores/table-owner";
import { WriterSetupError } from "../../outputs/output";
import { TaskOutputs } from "../../outputs/task-outputs";
import { blockTablesOf } from "../../outputs/output-kinds";
import { blockHashToRecord, readBlockHash, type BlockHashRead } from "./block-hash-read";

/** The events a task runner reports to WorkerCore: a task's progress and its end. */
export type TaskRunnerEvent = Extract<WorkerEvent, { type: "taskPhaseEntered" | "taskCallCountsChanged" | "taskSucceeded" | "taskFailed" }>;

/** What a task's calls need of their IO handle: serve a request, say whether an op only reads, release everything at the end. */
export type TaskCallIo = Pick<TaskIo, "call" | "end" | "isReadOp">;

/** What GetTaskResult returns besides the snapshot: values, the first error, the tables written. */
export interface TaskOutput {
  readonly returnValues: readonly JsonValue[];
  /** JSON bytes of returnValues (0 when none). */
  readonly resultBytes?: number;
  readonly firstError: CallError | undefined;
  readonly writes: readonly TableWriteSummary[];
}

export interface TaskRunnerDeps {
  /** Where calls run: the executor pool (an in-memory one in unit tests). */
  readonly pool: CallPool;
  readonly dispatcher: DispatcherConfig;
  /** The IO subsystem (a task gets its own handle: window, singleflight entries). */
  readonly io: { forTask(taskId: string): TaskCallIo };
  readonly tables: TableStore | null;
  readonly log: Logger;
  /** The Worker's one clock (the same WorkerCore is fed). */
  readonly nowMs: NowMs;
  /** Every call's budget; undefined: the pool's default. */
  readonly callBudgetMs?: number;
  /** Bounds of each task's kept log lines (DEFAULT_TASK_LOG_CAPS when absent). */
  readonly logCaps?: TaskLogCaps;
  /** The executor owner of a task without an authenticated identity: itself (the default), or one shared owner. */
  readonly ownerWithoutIdentity?: "task" | "shared";
  /** TASK_MAX_RESULT_BYTES: JSON bytes of return values one task keeps (DEFAULT_MAX_RESULT_BYTES when absent). */
  readonly maxResultBytes?: number;
  /** How often a running task's counts are reported at most (TASK_PROGRESS_INTERVAL_MS when absent; 0: every turn). */
  readonly progressIntervalMs?: number;
  /** TASK_IO_PREFETCH: fetch a call's predicted first IO request before it starts (IoPrefetchPlan); default true. */
  readonly ioPrefetch?: boolean;
  /**
   * Whether a chain's blocks may change (the router's answer): a block table on a chain that cannot
   * reorganise (the synthetic chain) records no block hash and reads none. Absent: every chain may.
   */
  readonly chainReorganises?: (chain: string) => boolean;
  /** Every commit's outcome as far as the store's reachability goes (RunFencing's health: the heartbeat's error rate). */
  readonly onStoreReached?: (reached: boolean, why: string) => void;
}

/** What ListTasks shows of a task besides its snapshot. */
export interface TaskInfo {
  readonly owner: string;
  /** The function's name, or `inline:` and the first 12 hex digits of its digest. */
  readonly function: string;
  readonly logLinesDropped: number;
}

interface RunningTask {
  readonly plan: TaskPlan;
  /** The task's IO handle: its window, its singleflight entries. */
  readonly io: TaskCallIo;
  /** The task's outputs: one writer per output, and the commit path (src/outputs/task-outputs.ts). */
  readonly outputs: TaskOutputs;
  readonly inflight: Map<string, DispatchedCall<JsonValue>>;
  /** Sub-calls running now; each id starts with its parent's call id and "/". */
  readonly subCalls: Set<string>;
  /** Serves every call's IO and sub-calls (one owner for the whole task). */
  readonly owner: CallOwner;
  /** What its function's calls ask first, learned from them (this task's and earlier ones'): fetched ahead for the next calls. */
  readonly prefetch: IoPrefetchPlan;
  /** Fetches ahead that failed in a row: past MAX_PREFETCH_FAILURES_IN_A_ROW the task fetches nothing ahead (the plan stays, for other tasks). */
  prefetchFailures: number;
  /** Top-level calls sent without a prefetched answer whose first IO request is still to be seen: their input by call id. */
  readonly firstIoOf: Map<string, JsonValue>;
  /** A task writing a block table: each running call's block hash as read when it was launched (block-hash-read.ts); null otherwise. */
  readonly blockHashes: Map<string, Promise<BlockHashRead>> | null;
  succeeded: number;
  failed: number;
  retried: number;
  countsDirty: boolean;
  countsFlushQueued: boolean;
  /** When the counts were last reported (the Worker's clock); a timer while a report waits for its turn. */
  countsFlushedAtMs: number;
  countsTimer: ReturnType<typeof setTimeout> | null;
}

/**
 * Progress (the call counts) is reported at most this often per task while its calls run; every
 * change of phase or state, and the last counts of a task, go at once. A report costs the Worker a
 * WorkerCore step, a TaskSnapshot encoded for every watcher and a write that wakes each watcher's
 * process, for counts nobody reads faster than a progress bar redraws. Once per call, at 1,000
 * calls/s, that held up the calls themselves: an IO-bound call at 16 in flight took 15.1-17.5 ms
 * with it and 14.6-15.0 ms without (bench/io/io-bound.ts's series, 4 paired runs).
 */
export const TASK_PROGRESS_INTERVAL_MS = 100;

/**
 * Functions whose IoPrefetchPlan the runner keeps (by executor owner, source digest and entry), the
 * least recently started dropped first. A plan is the function's, for one owner (an identity, or
 * each task without one unless EXECUTOR_OWNER_WITHOUT_IDENTITY=shared): the owner's next task of it
 * starts with what earlier ones learned, instead of sending its first window of calls (up to
 * TASK_MAX_INFLIGHT_CALLS) before two of them have shown their first request, and a task of a few
 * calls (the batch path) gains too.
 */
export const MAX_PREFETCH_PLANS = 256;

/**
 * A call whose answer could not be fetched ahead asks again itself (a retryable error may pass): a
 * backend that keeps failing would get each request twice, so a task stops fetching ahead after
 * this many failures in a row. Its own: an outage says nothing of the function's plan.
 */
export const MAX_PREFETCH_FAILURES_IN_A_ROW = 3;

/**
 * TaskRunner owns a task from the moment its plan is accepted to the moment the Worker forgets
 * it: the plan, its calls (through one DispatcherCore: per-task window, fairness between tasks,
 * retries of retryable failures), its writers and its output. It reports to WorkerCore in
 * WorkerCore's own events: the phase (EXECUTE once writers are set up and calls start, WRITE for
 * the writers' closing commit), coalesced call counts, and the end. A call that fails for good
 * fails its task at once, naming the call's input and carrying the Python traceback; the task's
 * other calls and their sub-calls are cancelled. stop() (cancel, timeout) does the same without a
 * report: WorkerCore already ended the task.
 */
export class TaskRunner {
  private readonly dispatcher: DispatcherCore<JsonValue>;
  /**
   * Plans accepted and not yet forgotten (a task is started from its plan), with their owner label
   * and the run they were claimed as (a task writing tables; every commit carries it), or null.
   */
  private readonly plans = new Map<string, { readonly plan: TaskPlan; readonly owner: string; readonly identity: string; readonly fence: RunFence | null; readonly admin: boolean }>();
  /** What each task's calls logged and printed, bounded, until the task is forgotten. */
  private readonly logs: TaskLogBook;
  private readonly tasks = new Map<string, RunningTask>();
  /** Ended tasks' outputs, until the Worker forgets the task. */
  private readonly outputs = new Map<string, TaskOutput>();
  /**
   * Table commits sent and not yet settled, by task. They outlive a stop: a commit in flight when
   * a task is cancelled cannot be recalled, so its end is told only once they settled.
   */
  private readonly commits = new Map<string, Set<Promise<unknown>>>();
  /** IoPrefetchPlans by owner and function (digest and entry), at most MAX_PREFETCH_PLANS, in order of last use. */
  private readonly prefetchPlans = new Map<string, IoPrefetchPlan>();
  /** Runs the dispatcher: launches the calls it hands out, one timer at its next retry. */
  private readonly driver: CoreDriver<DispatcherEvent<JsonValue>, DispatcherInstruction<JsonValue>>;
  /** Progress and ends of tasks, for WorkerCore (the driver queues them). */
  onEvent: (e: TaskRunnerEvent) => void = () => {};
  /**
   * Called for every finished call: true when it failed for a system reason (executor died,
   * hung, ran out of memory, internal error), the Worker's own health. A user's error, an
   * over-budget call or a failing backend says nothing about the Worker and counts as false.
   */
  onCallFinished: (systemFailure: boolean, info: CallFinishedInfo) => void = () => {};
  /** A call's table commit began; `done` settles once it is durable or failed (WORKER_TRACE). */
  onCommitStarted: (callId: string, done: Promise<unknown>) => void = () => {};
  /** New log lines of a task, as its calls end (StreamTaskLogs followers). */
  onLogLines: (taskId: string, lines: readonly TaskLogEntry[]) => void = () => {};

  constructor(private readonly deps: TaskRunnerDeps) {
    this.dispatcher = new DispatcherCore(deps.dispatcher);
    this.driver = new CoreDriver(this.dispatcher, { name: "dispatcher", carryOut: (i) => this.launch(i.call), nowMs: deps.nowMs, timeAdvanced: { type: "timeAdvanced" }, log: deps.log });
    this.logs = new TaskLogBook(deps.logCaps);
  }

  /**
   * accept keeps a validated plan (and its run's fence) until WorkerCore starts the task; false if
   * the id is known already. `identity` (with `admin`) is the requester's: the task's executor
   * owner and the writer its tables belong to.
   */
  accept(plan: TaskPlan, owner = "", identity = "", fence: RunFence | null = null, admin = false): boolean {
    if (this.plans.has(plan.taskId)) return false;
    this.plans.set(plan.taskId, { plan, owner, identity, fence, admin });
    return true;
  }

  /** knows: the task id was accepted here and not yet forgotten (a second submission of it is answered from here). */
  knows(taskId: string): boolean {
    return this.plans.has(taskId);
  }

  /** fenceOf: the run a task was claimed as (null: it writes no table, or it is unknown). */
  fenceOf(taskId: string): RunFence | null {
    return this.plans.get(taskId)?.fence ?? null;
  }

  /**
   * failRunsOf fails every running task claimed under `epoch` (its lease in the table store is
   * gone: none of their commits would be taken any more) with STALE_RUN and `message`.
   */
  failRunsOf(epoch: string, message: string): void {
    for (const t of [...this.tasks.values()]) {
      if (this.plans.get(t.plan.taskId)?.fence?.epoch !== epoch) continue;
      this.flushCounts(t);
      this.release(t);
      this.end(t.plan.taskId, { returnValues: [], firstError: undefined, writes: summaries(t) }, { type: "taskFailed", taskId: t.plan.taskId, error: { code: CallErrorCode.StaleRun, message } });
    }
    this.pump();
  }

  /** readLogs: the task's kept lines after `afterSeq`, or its last `tail`; null when it has none. */
  readLogs(taskId: string, o: { afterSeq?: number; tail?: number }): ReturnType<TaskLogBook["read"]> {
    return this.logs.read(taskId, o);
  }

  /** info: what ListTasks shows of a task the runner knows (undefined: never submitted here). */
  info(taskId: string): TaskInfo | undefined {
    const p = this.plans.get(taskId);
    if (!p) return undefined;
    const fn = p.plan.fn.name !== "" ? p.plan.fn.name : `inline:${p.plan.fn.digest.slice(0, 12)}`;
    return { owner: p.owner, function: fn, logLinesDropped: this.logs.dropped(taskId) };
  }

  /** start runs an accepted task (WorkerCore's startTask): writers first, then its calls. */
  start(taskId: string): void {
    const plan = this.plans.get(taskId)?.plan;
    if (!plan) {
      this.deps.log.error({ taskId }, "startTask for a task without a plan");
      this.onEvent({ type: "taskFailed", taskId, error: { code: CallErrorCode.Internal, message: "the worker lost the task's plan" } });
      return;
    }
    let outputs: TaskOutputs;
    try {
      const deps = {
        totalCalls: plan.calls.total,
        scopeOf: plan.scopeOf,
        tables: this.deps.tables,
        ...(this.deps.maxResultBytes !== undefined ? { maxResultBytes: this.deps.maxResultBytes } : {}),
      };
      const accepted = this.plans.get(taskId);
      outputs = TaskOutputs.open(plan.outputs, deps, accepted?.fence ?? null, writerOf(accepted?.identity ?? "", accepted?.admin ?? false));
    } catch (e) {
      if (!(e instanceof WriterSetupError)) throw e;
      this.end(taskId, { returnValues: [], firstError: undefined, writes: [] }, { type: "taskFailed", taskId, error: { code: CallErrorCode.Internal, message: e.message } });
      return;
    }
    const io = this.deps.io.forTask(taskId);
    const t: RunningTask = {
      plan,
      io,
      outputs,
      inflight: new Map(),
      subCalls: new Set(),
      owner: createCallOwner({
        io: (req, callId) => {
          this.watchFirstIo(t, req, callId);
          return io.call(req.backend, req.op, req.params).then((r) => r.answer);
        },
        functions: plan.functions,
        role: "Worker",
        budgetMs: this.deps.callBudgetMs,
        runSubCall: (call, owner) => this.runSubCall(t, call, owner),
        subCallWindow: this.deps.dispatcher.taskMaxInflightCalls,
      }),
      prefetch: this.prefetchPlanOf(this.ownerKeyOf(taskId), plan.fn),
      prefetchFailures: 0,
      firstIoOf: new Map(),
      blockHashes: plan.scopeOf !== null && blockTablesOf(plan.outputs).length > 0 && plan.blocks !== null && (this.deps.chainReorganises?.(plan.blocks.chain) ?? true) ? new Map() : null,
      succeeded: 0,
      failed: 0,
      retried: 0,
      countsDirty: true,
      countsFlushQueued: false,
      countsFlushedAtMs: -Infinity,
      countsTimer: null,
    };
    this.tasks.set(taskId, t);
    this.step({ type: "taskAdded", taskId, source: plan.calls.source() });
    this.onEvent({ type: "taskPhaseEntered", taskId, phase: "EXECUTE" });
    this.flushCounts(t);
    this.pump();
    if (this.dispatcher.isTaskDrained(taskId)) this.completeTask(t); // a task without inputs
  }

  /** stop ends a task that WorkerCore stopped (cancelled, timed out): no further calls run. */
  stop(taskId: string): void {
    const t = this.tasks.get(taskId);
    if (!t) return;
    this.release(t);
    this.outputs.set(taskId, { returnValues: [], firstError: undefined, writes: summaries(t) });
  }

  /** result is an ended task's output (undefined while it runs or once forgotten). */
  result(taskId: string): TaskOutput | undefined {
    return this.outputs.get(taskId);
  }

  /**
   * retainedBytes: what an ended task keeps in memory until it is forgotten: its result's JSON and
   * its log lines (the bytes of their text), and a first error's traceback; the bounded rest (the
   * write summaries, the story) is not counted.
   */
  retainedBytes(taskId: string): number {
    const out = this.outputs.get(taskId);
    const err = out?.firstError;
    return (out?.resultBytes ?? 0) + this.logs.bytesOf(taskId) + (err ? err.message.length + (err.traceback?.length ?? 0) : 0);
  }

  /** forget drops everything of a task: its plan (a slot that expired unsubmitted too), its output. */
  forget(taskId: string): void {
    this.stop(taskId);
    this.plans.delete(taskId);
    this.outputs.delete(taskId);
    this.logs.forget(taskId);
  }

  /** hasPendingWrites: some of the task's table commits are still in flight. */
  hasPendingWrites(taskId: string): boolean {
    return this.commits.has(taskId);
  }

  /**
   * writesSettled resolves once none of the task's table commits is in flight (at once when none
   * is): after a stop, nothing more of the task is written once it resolves.
   */
  async writesSettled(taskId: string): Promise<void> {
    for (let pending = this.commits.get(taskId); pending; pending = this.commits.get(taskId)) await Promise.allSettled([...pending]);
  }

  get runningTasks(): number {
    return this.tasks.size;
  }

  /** inflightCalls: calls (sub-calls included) of running tasks that are in an executor or waiting for one. */
  get inflightCalls(): number {
    let n = 0;
    for (const t of this.tasks.values()) n += t.inflight.size + t.subCalls.size;
    return n;
  }

  /** end records a task's output and reports its end; nothing of it runs any more. */
  private end(taskId: string, output: TaskOutput, report: TaskRunnerEvent): void {
    this.outputs.set(taskId, output);
    this.onEvent(report);
  }

  /** release stops the task's whole tree: its calls and every sub-call they started, its IO. */
  private release(t: RunningTask): void {
    this.tasks.delete(t.plan.taskId);
    if (t.countsTimer !== null) clearTimeout(t.countsTimer);
    t.countsTimer = null;
    this.step({ type: "taskRemoved", taskId: t.plan.taskId });
    for (const callId of [...t.inflight.keys(), ...t.subCalls]) this.deps.pool.cancel(callId, "task ended");
    t.inflight.clear();
    t.subCalls.clear();
    t.firstIoOf.clear();
    t.io.end(); // nothing of the task stays in the IO subsystem
  }

  /** step tells the dispatcher one fact and returns its reply (only timeAdvanced hands out calls). */
  private step(event: DispatcherEvent<JsonValue>): CallDecision | undefined {
    return this.driver.send<CallDecision>(event);
  }

  /**
   * pump starts every call the dispatcher hands out now (the driver arms its timer for the next
   * retry); asked while calls are being launched, it runs once they all are.
   */
  private pump(): void {
    this.driver.post({ type: "timeAdvanced" });
  }

  private launch(d: DispatchedCall<JsonValue>): void {
    const t = this.tasks.get(d.taskId)!;
    const callId = `${d.taskId}/${d.index}/${d.attempt}`;
    t.inflight.set(callId, d);
    // Asked as the call starts (beside its own reads) and again when it ends: see write().
    if (t.blockHashes !== null) t.blockHashes.set(callId, readBlockHash(t.io, t.plan.scopeOf!(d.call)));
    const startedMs = this.deps.nowMs();
    const predicted = this.deps.ioPrefetch === false || t.prefetchFailures >= MAX_PREFETCH_FAILURES_IN_A_ROW ? null : t.prefetch.predict(d.call);
    if (predicted === null || !t.io.isReadOp(predicted.backend, predicted.op)) return this.execute(t, callId, d, startedMs, undefined);
    // The answer is fetched first, through the task's IO like any request of its calls (window,
    // cache, singleflight, admission); the call then finds it in its ExecuteCall.
    const request = { kind: "io" as const, ...predicted };
    void t.io.call(request.backend, request.op, request.params).then(({ answer }) => {
      if (this.tasks.get(t.plan.taskId) !== t || !t.inflight.has(callId)) return; // the task ended meanwhile
      if (answer.ok) {
        t.prefetchFailures = 0;
        return this.execute(t, callId, d, startedMs, { request, answer });
      }
      t.prefetchFailures++;
      this.execute(t, callId, d, startedMs, undefined, false); // it asks what was predicted: nothing to learn
    });
  }

  private execute(t: RunningTask, callId: string, d: DispatchedCall<JsonValue>, startedMs: number, prefetched: PrefetchedAnswer | undefined, observeFirstIo = true): void {
    if (!prefetched && observeFirstIo && t.prefetch.state !== "off") t.firstIoOf.set(callId, d.call);
    const fence = this.plans.get(t.plan.taskId)?.fence;
    const run = fence ? { run: { taskId: fence.taskId, generation: fence.generation } } : {};
    const req = { callId, fn: t.plan.fn, args: d.call, ownerKey: this.executorOwnerKey(t), ...this.budget(), ...(prefetched ? { prefetched } : {}), ...run };
    void this.deps.pool.execute(req, t.owner).then((outcome) => this.onCallDone(t, callId, d, outcome, startedMs));
  }

  /**
   * prefetchPlanOf: the function's IoPrefetchPlan, shared by the tasks of one executor owner (a new
   * one the first time): what one owner's calls taught, or switched off, never steers another's.
   */
  private prefetchPlanOf(ownerKey: string, fn: TaskPlan["fn"]): IoPrefetchPlan {
    const key = `${ownerKey}\u0000${fn.digest}\u0000${fn.entry}`;
    const known = this.prefetchPlans.get(key);
    if (known) this.prefetchPlans.delete(key); // re-inserted last: the most recently used
    const plan = known ?? new IoPrefetchPlan();
    this.prefetchPlans.set(key, plan);
    if (this.prefetchPlans.size > MAX_PREFETCH_PLANS) this.prefetchPlans.delete(this.prefetchPlans.keys().next().value!);
    return plan;
  }

  /** watchFirstIo shows the task's IoPrefetchPlan the first IO request of a call that had no answer fetched ahead. */
  private watchFirstIo(t: RunningTask, req: Extract<SuspensionRequest, { kind: "io" }>, callId: string): void {
    const input = t.firstIoOf.get(callId);
    if (input === undefined) return;
    t.firstIoOf.delete(callId);
    if (req.bytes !== true) t.prefetch.observe(input, { backend: req.backend, op: req.op, params: req.params });
  }

  /**
   * executorOwnerKey: whose calls may share an executor (ExecutorPool recycles an executor between
   * owners): the task's authenticated identity (its certificate's, under mTLS), so that one
   * client's tasks reuse warm executors; without one (BLOCKX_INSECURE: the owner label is only a
   * name anyone can send) every task is its own owner, unless the operator chose one shared owner
   * for them (EXECUTOR_OWNER_WITHOUT_IDENTITY=shared: a recycle per task costs a process start).
   */
  private executorOwnerKey(t: RunningTask): string {
    return this.ownerKeyOf(t.plan.taskId);
  }

  private ownerKeyOf(taskId: string): string {
    return executorOwnerKey(this.plans.get(taskId)?.identity ?? null, this.deps.ownerWithoutIdentity, `task:${taskId}`);
  }

  private budget(): { budgetMs?: number } {
    return this.deps.callBudgetMs ? { budgetMs: this.deps.callBudgetMs } : {};
  }

  private onCallDone(t: RunningTask, callId: string, d: DispatchedCall<JsonValue>, result: CallOutcome, startedMs: number): void {
    this.onCallFinished(isSystemFailure(result), finishedInfo(result, this.deps.nowMs() - startedMs));
    const hashAtStart = t.blockHashes?.get(callId);
    t.blockHashes?.delete(callId);
    if (!t.inflight.delete(callId) || this.tasks.get(t.plan.taskId) !== t) return; // the task ended meanwhile
    t.firstIoOf.delete(callId);
    // Whether a prefetched answer was taken; a call that failed may not have reached its first request.
    if (result.prefetchUsed !== undefined && result.ok) t.prefetch.prefetchEnded(result.prefetchUsed);
    this.keepLogs(t, d, result);
    this.cancelSubCallsOf(t, callId); // a parent that ended (its executor died) no longer waits for them
    if (!result.ok) return this.callSettled(t, callId, d, result);
    // The call's rows go to the table store (asynchronously: the event loop goes on meanwhile); the
    // dispatcher hears of the call only once they are durable, so a task never succeeds before them.
    const taskId = t.plan.taskId;
    const commit = this.write(t, d, result, hashAtStart);
    this.onCommitStarted(callId, commit);
    const pending = this.commits.get(taskId) ?? new Set<Promise<unknown>>();
    this.commits.set(taskId, pending.add(commit));
    void commit.then((outcome) => {
      pending.delete(commit);
      if (pending.size === 0 && this.commits.get(taskId) === pending) this.commits.delete(taskId);
      if (this.tasks.get(taskId) === t) this.callSettled(t, callId, d, outcome);
    });
  }

  private callSettled(t: RunningTask, callId: string, d: DispatchedCall<JsonValue>, outcome: CallOutcome): void {
    const decision = this.step({ type: "callFinished", call: d, result: resultOf(outcome) })!;
    t.countsDirty = true;
    if (outcome.ok) {
      t.succeeded++;
    } else if (decision.kind === "retryScheduled") {
      t.retried++;
      this.deps.log.info({ taskId: t.plan.taskId, callId, code: outcome.error.code, nextAttempt: decision.attempt }, "call failed retryably; retrying");
    } else {
      t.failed++;
      const e = outcome.error;
      const firstError: CallError = {
        code: e.code,
        message: decision.kind === "failed" && decision.reason === "attempts_exhausted" ? `${e.message} (after ${d.attempt} attempts)` : e.message,
        callId,
        traceback: e.traceback,
        callIndex: d.index,
        callInput: JSON.stringify(d.call).slice(0, 4096),
      };
      this.flushCounts(t);
      this.release(t);
      this.end(
        t.plan.taskId,
        { returnValues: [], firstError, writes: summaries(t) },
        { type: "taskFailed", taskId: t.plan.taskId, error: { code: e.code, message: `call ${d.index} (input ${firstError.callInput}) failed: ${firstError.message}` } },
      );
      this.pump();
      return;
    }
    this.scheduleCountsFlush(t);
    this.pump();
    if (this.dispatcher.isTaskDrained(t.plan.taskId)) this.completeTask(t);
  }

  /** completeTask: every call succeeded; WRITE is each writer's closing commit, then the result. */
  private completeTask(t: RunningTask): void {
    const taskId = t.plan.taskId;
    this.flushCounts(t);
    this.onEvent({ type: "taskPhaseEntered", taskId, phase: "WRITE" });
    this.release(t);
    try {
      t.outputs.finish();
    } catch (e) {
      this.end(taskId, { returnValues: [], firstError: undefined, writes: summaries(t) }, { type: "taskFailed", taskId, error: { code: CallErrorCode.Internal, message: `the WRITE phase failed: ${(e as Error).message}` } });
      return;
    }
    // A return_value output: the values, ordered by call index, are the task's result.
    const returnValues = t.outputs.returnValues();
    this.end(taskId, { returnValues, resultBytes: returnValues.length > 0 ? t.outputs.resultBytes() : 0, firstError: undefined, writes: summaries(t) }, { type: "taskSucceeded", taskId });
  }

  /** keepLogs files what a call logged and printed under its task, tagged with its input, and tells followers. */
  private keepLogs(t: RunningTask, d: DispatchedCall<JsonValue>, o: CallOutcome): void {
    const stdout = o.stderr !== undefined ? (o.stdout ?? "") : o.output;
    if (o.logs.length === 0 && stdout === "" && !o.stderr) return;
    const lines = this.logs.append(t.plan.taskId, {
      callIndex: d.index,
      attempt: d.attempt,
      input: t.plan.inputLabel(d.call, d.index),
      endedAtMs: Date.now(),
      logs: o.logs,
      stdout,
      stderr: o.stderr ?? "",
    });
    if (lines.length > 0) this.onLogLines(t.plan.taskId, lines);
  }

  /**
   * Counts are coalesced: one report per task per turn of the event loop, and at most one per
   * TASK_PROGRESS_INTERVAL_MS (the rest wait on a timer, which the task's end makes moot).
   */
  private scheduleCountsFlush(t: RunningTask): void {
    if (!t.countsDirty || t.countsFlushQueued) return;
    t.countsFlushQueued = true;
    const flush = () => {
      t.countsFlushQueued = false;
      t.countsTimer = null;
      if (this.tasks.get(t.plan.taskId) === t) this.flushCounts(t);
    };
    const waitMs = t.countsFlushedAtMs + (this.deps.progressIntervalMs ?? TASK_PROGRESS_INTERVAL_MS) - this.deps.nowMs();
    if (waitMs <= 0) queueMicrotask(flush);
    else t.countsTimer = setTimeout(flush, waitMs);
  }

  private flushCounts(t: RunningTask): void {
    if (t.countsTimer !== null) {
      clearTimeout(t.countsTimer);
      t.countsTimer = null;
      t.countsFlushQueued = false;
    }
    if (!t.countsDirty) return;
    t.countsDirty = false;
    t.countsFlushedAtMs = this.deps.nowMs();
    this.onEvent({ type: "taskCallCountsChanged", taskId: t.plan.taskId, callsTotal: t.plan.calls.total, callsSucceeded: t.succeeded, callsFailed: t.failed, callsRetried: t.retried });
  }

  /**
   * write hands a succeeded call's value to the task's outputs, which commit it (TaskOutputs): a
   * value they cannot take fails the call as the user's error (not retried); a store that is down
   * fails it as STORE_UNAVAILABLE (retried with backoff). Nothing of a failed commit is written.
   */
  private async write(t: RunningTask, d: DispatchedCall<JsonValue>, outcome: Extract<CallOutcome, { ok: true }>, hashAtStart: Promise<BlockHashRead> | undefined): Promise<CallOutcome> {
    let blockHash: string | null | undefined;
    if (hashAtStart !== undefined) {
      // A block table's rows record the hash of the block they were computed from: read as the call
      // started and again now; a block replaced meanwhile (a reorg) fails the call retryably.
      const scope = t.plan.scopeOf!(d.call);
      const h = blockHashToRecord(scope, await hashAtStart, await readBlockHash(t.io, scope));
      if (!h.ok) {
        const code = h.retryable ? CallErrorCode.BackendRetryable : CallErrorCode.Internal;
        return { ...outcome, ok: false, error: { code, message: h.message, traceback: "", line: 0, column: 0, retryable: h.retryable } };
      }
      blockHash = h.hash;
    }
    const c = await t.outputs.commit({ index: d.index, input: d.call, value: outcome.value, ...(blockHash !== undefined ? { blockHash } : {}) });
    if (c.storeReached !== undefined) this.deps.onStoreReached?.(c.storeReached, c.ok ? "" : c.rejected.message);
    if (c.ok) return outcome;
    const r = c.rejected;
    return { ...outcome, ok: false, error: { code: r.code, message: r.message, traceback: "", line: 0, column: 0, retryable: r.retryable } };
  }

  /**
   * runSubCall runs a sub-call like a call: counted in the task's window, retried with backoff when
   * its executor dies (crash, OOM, hang) instead of failing the parent, cancelled with its task.
   * Each attempt gets its own id under the parent's (`<task>/<index>/<attempt>/sub-<n>...`).
   */
  private async runSubCall(t: RunningTask, call: Parameters<RunSubCall>[0], owner: CallOwner): ReturnType<RunSubCall> {
    const taskId = t.plan.taskId;
    let spentMs = 0; // by the attempts before this one: the parent is charged for all of them
    for (let attempt = 1; ; attempt++) {
      if (this.tasks.get(taskId) !== t) return { ok: false, error: { type: CallErrorCode.Cancelled, message: "the task ended" }, spentMs };
      const callId = call.nextCallId();
      t.subCalls.add(callId);
      this.step({ type: "subCallStarted", taskId });
      const startedMs = this.deps.nowMs();
      const out = await this.deps.pool.execute({ callId, fn: call.fn, args: call.args, ownerKey: this.executorOwnerKey(t), ...(call.budgetMs !== undefined ? { budgetMs: call.budgetMs } : {}) }, owner);
      t.subCalls.delete(callId);
      this.onCallFinished(isSystemFailure(out), finishedInfo(out, this.deps.nowMs() - startedMs));
      const decision = this.step({ type: "subCallFinished", taskId, attempt, result: resultOf(out) })!;
      this.pump(); // its place in the window is free for the task's next call
      if (out.ok) return resumeResultOf(out, "", spentMs);
      if (decision.kind !== "retryScheduled" || this.tasks.get(taskId) !== t) {
        return resumeResultOf(out, decision.kind === "failed" && decision.reason === "attempts_exhausted" ? ` (after ${attempt} attempts)` : "", spentMs);
      }
      spentMs += out.cpuMs + out.ioMs;
      t.retried++;
      t.countsDirty = true;
      this.scheduleCountsFlush(t);
      this.deps.log.info({ taskId, callId, code: out.error.code, nextAttempt: decision.attempt }, "sub-call failed retryably; retrying");
      await Bun.sleep(Math.max(0, decision.atMs - this.deps.nowMs()));
    }
  }

  /** cancelSubCallsOf cancels every sub-call below a call (ids carry their ancestors' ids). */
  private cancelSubCallsOf(t: RunningTask, callId: string): void {
    for (const id of t.subCalls) {
      if (!id.startsWith(`${callId}/`)) continue;
      this.deps.pool.cancel(id, "parent call ended");
      t.subCalls.delete(id);
    }
  }
}


function resultOf(o: CallOutcome): CallResult {
  return o.ok ? { ok: true } : { ok: false, retryable: o.error.retryable };
}

/** What metrics learn of a finished call: its outcome (`OK` or the error code, a closed set) and how long it took. */
export interface CallFinishedInfo {
  readonly outcome: "OK" | CallErrorCode | "OTHER";
  readonly seconds: number;
}

const KNOWN_CODES: ReadonlySet<string> = new Set(Object.values(CallErrorCode));

function finishedInfo(o: CallOutcome, ms: number): CallFinishedInfo {
  const outcome = o.ok ? "OK" : KNOWN_CODES.has(o.error.code) ? (o.error.code as CallErrorCode) : "OTHER";
  return { outcome, seconds: Math.max(0, ms) / 1000 };
}

/**
 * isSystemFailure: the call failed for a reason of this Worker's own (an internal error, a pool
 * shutting down under it). A user's error, an over-budget call, a backend or table store that is down or
 * overloaded, and an executor that died while running calls (blame "call": one of them killed it)
 * say nothing about the Worker's health.
 */
function isSystemFailure(o: CallOutcome): boolean {
  if (o.ok || o.error.blame === "call") return false;
  return o.error.code !== CallErrorCode.BackendRetryable && o.error.code !== CallErrorCode.StoreUnavailable && (o.error.retryable || o.error.code === CallErrorCode.Internal);
}

function summaries(t: RunningTask): TableWriteSummary[] {
  return t.outputs.summaries();
}
