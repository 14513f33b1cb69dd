import type { Logger } from "../../common/logging/logger";
import type { CallError, TableWriteSummary } from "../../gen/worker/v1/worker";
import type { IoSubsystem, TaskIo } from "../io/io-subsystem";
import { TableStoreError, type Row, type TableStore } from "../writers/table-store";
import { CallErrorCode, type CallOutcome, type CallOwner } from "../executor/call";
import type { ExecutorPool } from "../executor/executor-pool";
import type { JsonValue, ResumeResult } from "../executor/protocol";
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
  readonly values: JsonValue[];
  /** Per table: rows and calls written so far. */
  readonly writes: Map<string, { handler: "block_table_write" | "normal_table_write"; rows: number; calls: number }>;
  readonly inflight: Map<string, DispatchedCall<JsonValue>>;
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
  private subCallSeq = 0;

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
    const t: RunningTask = { plan, io: this.io.forTask(plan.taskId), values: plan.returnValues ? new Array(plan.calls.total) : [], writes: new Map(), inflight: new Map(), succeeded: 0, failed: 0, retried: 0, firstError: undefined, countsDirty: true, countsFlushQueued: false };
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
    for (const callId of t.inflight.keys()) this.pool.cancel(callId, "task ended");
    t.inflight.clear();
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
    // A backend that is down or overloaded says nothing about this Worker's health.
    this.onCallFinished(!result.ok && result.error.code !== CallErrorCode.BackendRetryable && (result.error.retryable || result.error.code === CallErrorCode.Internal));
    if (!t.inflight.delete(callId) || this.tasks.get(t.plan.taskId) !== t) return; // the task ended meanwhile
    // Rows are written as calls finish; a row that does not fit fails the call (not retryable).
    const outcome = result.ok ? this.writeRows(t, d, result) : result;
    const decision = this.dispatcher.callFinished(d, outcome.ok ? { ok: true } : { ok: false, retryable: outcome.error.retryable }, Date.now());
    t.countsDirty = true;
    if (outcome.ok) {
      t.succeeded++;
      if (t.plan.returnValues) t.values[d.index] = outcome.value;
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

  private completeTask(t: RunningTask): void {
    this.flushCounts(t);
    this.report({ type: "phase", taskId: t.plan.taskId, phase: "WRITE" });
    this.finishTask(t);
    // ReturnValueHandler: the values, ordered by call index, are the task's result.
    this.outputs.set(t.plan.taskId, { returnValues: t.values, firstError: undefined, writes: summaries(t) });
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

  /**
   * writeRows writes a successful call's rows to the task's tables (its value must then be a
   * list of row objects) and turns a misfit into a failed outcome.
   */
  private writeRows(t: RunningTask, d: DispatchedCall<JsonValue>, outcome: Extract<CallOutcome, { ok: true }>): CallOutcome {
    const { blockTables, normalTables, scopeOf } = t.plan;
    if (blockTables.length === 0 && normalTables.length === 0) return outcome;
    const fail = (code: CallErrorCode, message: string): CallOutcome => ({
      ...outcome,
      ok: false,
      error: { code, message, traceback: "", line: 0, column: 0, retryable: false },
    });
    const value = outcome.value;
    if (!Array.isArray(value) || value.some((r) => r === null || typeof r !== "object" || Array.isArray(r))) {
      return fail(CallErrorCode.ResultNotRows, "a function writing to a table must return a list of rows (dicts of column -> value)");
    }
    if (!this.tables) return fail(CallErrorCode.Internal, "this Worker has no table store");
    const rows = value as Row[];
    try {
      for (const table of blockTables) {
        const scope = scopeOf!(d.call);
        const replaced = this.tables.replaceBlockRows(table, scope, rows);
        if (replaced.uncovered.length > 0) {
          // An earlier call's scope reached past this one: its rows went whole, so those blocks
          // outside this call's range have none now. Said once per write, with the blocks.
          const blocks = replaced.uncovered.map((u) => `${u.fromBlock}..${u.toBlock}`).join(", ");
          this.log.warn(
            { taskId: t.plan.taskId, table, chain: scope.chain, scope: `${scope.fromBlock}..${scope.toBlock}`, replacedScopes: blocks },
            `block table ${table}: rows of earlier scopes ${blocks} were replaced by scope ${scope.fromBlock}..${scope.toBlock}; blocks of those scopes outside it have no rows until a task covers them again`,
          );
        }
        bump(t, table, "block_table_write", rows.length);
      }
      for (const table of normalTables) {
        this.tables.appendRows(table, rows);
        bump(t, table, "normal_table_write", rows.length);
      }
    } catch (e) {
      if (e instanceof TableStoreError) return fail(CallErrorCode.RowMismatch, e.message);
      return fail(CallErrorCode.Internal, `writing rows failed: ${(e as Error).message}`);
    }
    return outcome;
  }

  /** owner serves a call's IO (through the task's IO handle) and sub-calls (depth-limited; names from the task's pinned snapshot). */
  private owner(t: RunningTask, depth: number): CallOwner {
    const plan = t.plan;
    return {
      io: (req) => t.io.call(req.backend, req.op, req.params).then((r) => r.answer),
      subCall: async (req): Promise<ResumeResult> => {
        if (depth + 1 > MAX_SUB_CALL_DEPTH) return { ok: false, error: { type: "DEPTH_EXCEEDED", message: `sub-calls nest deeper than ${MAX_SUB_CALL_DEPTH}` } };
        let fn: { source: string; entry: string; digest?: string; filename?: string };
        if ("name" in req.function) {
          const code = plan.functions?.get(req.function.name);
          if (!code) return { ok: false, error: { type: "FUNCTION_NOT_FOUND", message: `no function ${JSON.stringify(req.function.name)} in this task's function snapshot` } };
          fn = { source: code.source, entry: "main", digest: code.digest, filename: `${req.function.name}.py` };
        } else {
          fn = { source: req.function.source, entry: req.function.entry ?? "main" };
        }
        const out = await this.pool.execute({ callId: `sub-${++this.subCallSeq}`, fn, args: req.args }, this.owner(t, depth + 1));
        return out.ok ? { ok: true, value: out.value } : { ok: false, error: { type: out.error.code, message: out.error.message, traceback: out.error.traceback } };
      },
    };
  }
}

function bump(t: RunningTask, table: string, handler: "block_table_write" | "normal_table_write", rows: number): void {
  const w = t.writes.get(table) ?? { handler, rows: 0, calls: 0 };
  w.rows += rows;
  w.calls++;
  t.writes.set(table, w);
}

function summaries(t: RunningTask): TableWriteSummary[] {
  return [...t.writes].map(([table, w]) => ({ table, handler: w.handler, rowsWritten: w.rows, callsWritten: w.calls }));
}
