import type { Logger } from "../../common/logging/logger";
import type { CallError, TableWriteSummary } from "../../gen/worker/v1/worker";
import type { IoSubsystem, TaskIo } from "../../runtime/io/io-subsystem";
import type { TableStore } from "../../common/tables/table-store";
import { WriteRejected, type Writer } from "../writers/writer";
import { createWriters, WriterSetupError } from "../writers/writers";
import { CallErrorCode, type CallOutcome, type CallOwner } from "../../runtime/calls/call";
import type { ExecutorPool } from "../../runtime/executor/executor-pool";
import type { JsonValue, ResumeResult } from "../../runtime/executor/protocol";
import { DispatcherCore, type DispatchedCall, type DispatcherConfig } from "../core/dispatcher-core";
import type { TaskPlan } from "./task-plan";

/** Sub-calls deeper than this fail, so that a function calling itself cannot run away. */
export const MAX_SUB_CALL_DEPTH = 8;

/** What the executor tells WorkerCore about a task (the adapter turns these into core events). */
export type TaskReport =
  | { type: "phase"; taskId: string; phase: "EXECUTE" | "WRITE" }
  | { type: "counts"; taskId: string; callsTotal: number; callsSucceeded: number; callsFailed: number; callsRetried: number }
  | { type: "succeeded"; taskId: string }
  | { type: "failed"; taskId: string; code: string; message: string };

interface RunningTask {
  readonly plan: TaskPlan;
  /** The task's IO handle: its window, its singleflight entries. */
  readonly io: TaskIo;
  /** One writer plugin per output of the task, in the task's order. */
  readonly writers: readonly Writer[];
  readonly inflight: Map<string, DispatchedCall<JsonValue>>;
  /** Sub-calls running now; each id starts with its parent's call id and "/". */
  readonly subCalls: Set<string>;
  subCallSeq: number;
  succeeded: number;
  failed: number;
  retried: number;
  firstError: CallError | undefined;
  countsDirty: boolean;
  countsFlushQueued: boolean;
}

export interface TaskOutput {
  readonly returnValues: readonly JsonValue[];
  readonly firstError: CallError | undefined;
  readonly writes: readonly TableWriteSummary[];
}

/**
 * TaskExecutor runs the EXECUTE and WRITE phases of the Worker's tasks: it feeds each task's
 * calls to the executor pool through one DispatcherCore (per-task window, fairness between
 * tasks, retries of retryable failures), collects return values by call index, and reports
 * progress and the end of each task. A call that fails for good fails its task at once,
 * naming the call's input and carrying the Python traceback; the task's other calls are
 * cancelled. stop() (cancel, timeout) drops a task's pending calls and cancels the running ones.
 */
export class TaskExecutor {
  private readonly dispatcher: DispatcherCore<JsonValue>;
  private readonly tasks = new Map<string, RunningTask>();
  /** Finished tasks' outputs, until the Worker forgets the task. */
  private readonly outputs = new Map<string, TaskOutput>();
  private wakeTimer: ReturnType<typeof setTimeout> | null = null;
  /**
   * Called for every finished call: true when it failed for a system reason (executor died,
   * hung, ran out of memory, internal error), the Worker's own health. A user's error, an
   * over-budget call or a failing backend says nothing about the Worker and counts as false.
   */
  onCallFinished: (systemFailure: boolean) => void = () => {};
  private pumping = false;

  constructor(
    private readonly pool: ExecutorPool,
    config: DispatcherConfig,
    private readonly report: (r: TaskReport) => void,
    private readonly log: Logger,
    private readonly io: IoSubsystem,
    private readonly tables: TableStore | null,
    private readonly callBudgetMs?: number,
  ) {
    this.dispatcher = new DispatcherCore(config);
  }

  start(plan: TaskPlan): void {
    let writers: Writer[];
    try {
      writers = createWriters(plan.outputs, { taskId: plan.taskId, totalCalls: plan.calls.total, scopeOf: plan.scopeOf, tables: this.tables, log: this.log });
    } catch (e) {
      if (!(e instanceof WriterSetupError)) throw e;
      this.outputs.set(plan.taskId, { returnValues: [], firstError: undefined, writes: [] });
      this.report({ type: "failed", taskId: plan.taskId, code: CallErrorCode.Internal, message: e.message });
      return;
    }
    const t: RunningTask = { plan, io: this.io.forTask(plan.taskId), writers, inflight: new Map(), subCalls: new Set(), subCallSeq: 0, succeeded: 0, failed: 0, retried: 0, firstError: undefined, countsDirty: true, countsFlushQueued: false };
    this.tasks.set(plan.taskId, t);
    this.dispatcher.addTask(plan.taskId, plan.calls.source());
    this.report({ type: "phase", taskId: plan.taskId, phase: "EXECUTE" });
    this.flushCounts(t);
    this.pump();
    if (this.dispatcher.isTaskDrained(plan.taskId)) this.completeTask(t); // a task without inputs
  }

  /** stop ends a task that WorkerCore stopped (cancelled, timed out): no further calls run. */
  stop(taskId: string): void {
    const t = this.tasks.get(taskId);
    if (!t) return;
    this.finishTask(t);
    this.outputs.set(taskId, { returnValues: [], firstError: t.firstError, writes: summaries(t) });
  }

  output(taskId: string): TaskOutput | undefined {
    return this.outputs.get(taskId);
  }

  forget(taskId: string): void {
    this.stop(taskId);
    this.outputs.delete(taskId);
  }

  get runningTasks(): number {
    return this.tasks.size;
  }

  private finishTask(t: RunningTask): void {
    this.tasks.delete(t.plan.taskId);
    this.dispatcher.removeTask(t.plan.taskId);
    // The whole tree: the task's calls and every sub-call they started.
    for (const callId of [...t.inflight.keys(), ...t.subCalls]) this.pool.cancel(callId, "task ended");
    t.inflight.clear();
    t.subCalls.clear();
    t.io.end(); // nothing of the task stays in the IO subsystem
  }

  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (const d of this.dispatcher.next(Date.now())) this.launch(d);
      this.armWake();
    } finally {
      this.pumping = false;
    }
  }

  private armWake(): void {
    const at = this.dispatcher.nextWakeMs();
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = at === null ? null : setTimeout(() => this.pump(), Math.max(0, at - Date.now()));
  }

  private launch(d: DispatchedCall<JsonValue>): void {
    const t = this.tasks.get(d.taskId)!;
    const callId = `${d.taskId}/${d.index}/${d.attempt}`;
    t.inflight.set(callId, d);
    void this.pool
      .execute({ callId, fn: t.plan.fn, args: d.call, ...(this.callBudgetMs ? { budgetMs: this.callBudgetMs } : {}) }, this.owner(t, 0))
      .then((outcome) => this.onCallDone(t, callId, d, outcome));
  }

  private onCallDone(t: RunningTask, callId: string, d: DispatchedCall<JsonValue>, result: CallOutcome): void {
    this.onCallFinished(isSystemFailure(result));
    if (!t.inflight.delete(callId) || this.tasks.get(t.plan.taskId) !== t) return; // the task ended meanwhile
    this.cancelSubCallsOf(t, callId); // a parent that ended (its executor died) no longer waits for them
    // Each writer takes the call's value as it finishes; a value it cannot write fails the call (not retryable).
    const outcome = result.ok ? this.write(t, d, result) : result;
    const decision = this.dispatcher.callFinished(d, outcome.ok ? { ok: true } : { ok: false, retryable: outcome.error.retryable }, Date.now());
    t.countsDirty = true;
    if (outcome.ok) {
      t.succeeded++;
    } else if (decision.kind === "retryScheduled") {
      t.retried++;
      this.log.info({ taskId: t.plan.taskId, callId, code: outcome.error.code, nextAttempt: decision.attempt }, "call failed retryably; retrying");
    } else {
      t.failed++;
      const e = outcome.error;
      t.firstError = {
        code: e.code,
        message: decision.kind === "failed" && decision.reason === "attempts_exhausted" ? `${e.message} (after ${d.attempt} attempts)` : e.message,
        callId,
        traceback: e.traceback,
        callIndex: d.index,
        callInput: JSON.stringify(d.call).slice(0, 4096),
      };
      this.flushCounts(t);
      this.finishTask(t);
      this.outputs.set(t.plan.taskId, { returnValues: [], firstError: t.firstError, writes: summaries(t) });
      this.report({
        type: "failed",
        taskId: t.plan.taskId,
        code: e.code,
        message: `call ${d.index} (input ${t.firstError.callInput}) failed: ${t.firstError.message}`,
      });
      this.pump();
      return;
    }
    this.scheduleCountsFlush(t);
    this.pump();
    if (this.dispatcher.isTaskDrained(t.plan.taskId)) this.completeTask(t);
  }

  /** completeTask: every call succeeded; WRITE is each writer's closing commit, then the result. */
  private completeTask(t: RunningTask): void {
    this.flushCounts(t);
    this.report({ type: "phase", taskId: t.plan.taskId, phase: "WRITE" });
    this.finishTask(t);
    try {
      for (const w of t.writers) w.finish();
    } catch (e) {
      this.outputs.set(t.plan.taskId, { returnValues: [], firstError: undefined, writes: summaries(t) });
      this.report({ type: "failed", taskId: t.plan.taskId, code: CallErrorCode.Internal, message: `the WRITE phase failed: ${(e as Error).message}` });
      return;
    }
    // A return_value output: the values, ordered by call index, are the task's result.
    const returnValues = t.writers.map((w) => w.returnValues()).find((v) => v !== undefined) ?? [];
    this.outputs.set(t.plan.taskId, { returnValues, firstError: undefined, writes: summaries(t) });
    this.report({ type: "succeeded", taskId: t.plan.taskId });
  }

  /** Counts are coalesced: one report per task per turn of the event loop. */
  private scheduleCountsFlush(t: RunningTask): void {
    if (!t.countsDirty || t.countsFlushQueued) return;
    t.countsFlushQueued = true;
    queueMicrotask(() => {
      t.countsFlushQueued = false;
      if (this.tasks.get(t.plan.taskId) === t) this.flushCounts(t);
    });
  }

  private flushCounts(t: RunningTask): void {
    if (!t.countsDirty) return;
    t.countsDirty = false;
    this.report({ type: "counts", taskId: t.plan.taskId, callsTotal: t.plan.calls.total, callsSucceeded: t.succeeded, callsFailed: t.failed, callsRetried: t.retried });
  }

  /** write hands a succeeded call's value to each of the task's writers; a value one cannot write fails the call. */
  private write(t: RunningTask, d: DispatchedCall<JsonValue>, outcome: Extract<CallOutcome, { ok: true }>): CallOutcome {
    const fail = (code: CallErrorCode, message: string): CallOutcome => ({
      ...outcome,
      ok: false,
      error: { code, message, traceback: "", line: 0, column: 0, retryable: false },
    });
    try {
      for (const w of t.writers) w.write({ index: d.index, input: d.call, value: outcome.value });
    } catch (e) {
      if (e instanceof WriteRejected) return fail(e.code, e.message);
      return fail(CallErrorCode.Internal, `writing rows failed: ${(e as Error).message}`);
    }
    return outcome;
  }

  /**
   * owner serves a call's IO (through the task's IO handle) and its sub-calls. A sub-call is a call
   * like any other: depth-limited, resolved by name in the task's pinned snapshot, run with the
   * call budget, counted in the task's window, retried with backoff when its executor dies (crash,
   * OOM, hang) instead of failing the parent, and cancelled with its task. Its id carries the
   * parent's: `<task>/<index>/<attempt>/sub-<n>[/sub-<m>...]`.
   */
  private owner(t: RunningTask, depth: number): CallOwner {
    const plan = t.plan;
    return {
      io: (req) => t.io.call(req.backend, req.op, req.params).then((r) => r.answer),
      subCall: async (req, parentCallId): Promise<ResumeResult> => {
        if (depth + 1 > MAX_SUB_CALL_DEPTH) return { ok: false, error: { type: "DEPTH_EXCEEDED", message: `sub-calls nest deeper than ${MAX_SUB_CALL_DEPTH}` } };
        let fn: { source: string; entry: string; digest?: string; filename?: string };
        if ("name" in req.function) {
          const code = plan.functions?.get(req.function.name);
          if (!code) return { ok: false, error: { type: "FUNCTION_NOT_FOUND", message: `no function ${JSON.stringify(req.function.name)} in this task's function snapshot` } };
          fn = { source: code.source, entry: "main", digest: code.digest, filename: `${req.function.name}.py` };
        } else {
          fn = { source: req.function.source, entry: req.function.entry ?? "main" };
        }
        const taskId = plan.taskId;
        for (let attempt = 1; ; attempt++) {
          if (this.tasks.get(taskId) !== t) return { ok: false, error: { type: CallErrorCode.Cancelled, message: "the task ended" } };
          const callId = `${parentCallId}/sub-${++t.subCallSeq}`;
          t.subCalls.add(callId);
          this.dispatcher.subCallStarted(taskId);
          const out = await this.pool.execute({ callId, fn, args: req.args, ...(this.callBudgetMs ? { budgetMs: this.callBudgetMs } : {}) }, this.owner(t, depth + 1));
          t.subCalls.delete(callId);
          this.onCallFinished(isSystemFailure(out));
          const decision = this.dispatcher.subCallFinished(taskId, attempt, out.ok ? { ok: true } : { ok: false, retryable: out.error.retryable }, Date.now());
          if (out.ok) return { ok: true, value: out.value };
          if (decision.kind !== "retryScheduled" || this.tasks.get(taskId) !== t) {
            const after = decision.kind === "failed" && decision.reason === "attempts_exhausted" ? ` (after ${attempt} attempts)` : "";
            return { ok: false, error: { type: out.error.code, message: `${out.error.message}${after}`, traceback: out.error.traceback } };
          }
          t.retried++;
          t.countsDirty = true;
          this.scheduleCountsFlush(t);
          this.log.info({ taskId, callId, code: out.error.code, nextAttempt: decision.attempt }, "sub-call failed retryably; retrying");
          await Bun.sleep(Math.max(0, decision.atMs - Date.now()));
        }
      },
    };
  }

  /** cancelSubCallsOf cancels every sub-call below a call (ids carry their ancestors' ids). */
  private cancelSubCallsOf(t: RunningTask, callId: string): void {
    for (const id of t.subCalls) {
      if (!id.startsWith(`${callId}/`)) continue;
      this.pool.cancel(id, "parent call ended");
      t.subCalls.delete(id);
    }
  }

}

/**
 * isSystemFailure: the call failed for a reason of this Worker's own (an executor died, hung, ran
 * out of memory; an internal error). A user's error, an over-budget call or a backend that is down
 * or overloaded says nothing about the Worker's health.
 */
function isSystemFailure(o: CallOutcome): boolean {
  return !o.ok && o.error.code !== CallErrorCode.BackendRetryable && (o.error.retryable || o.error.code === CallErrorCode.Internal);
}

function summaries(t: RunningTask): TableWriteSummary[] {
  return t.writers.flatMap((w) => w.summary() ?? []);
}
