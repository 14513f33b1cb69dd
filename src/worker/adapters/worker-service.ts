import * as grpc from "@grpc/grpc-js";
import { TERMINAL_TASK_STATES } from "../../common/terminal-task-states";
import { ErrorCode } from "../../common/error-code";
import { grpcError } from "../../common/grpc/grpc-server";
import type { Logger } from "../../common/logging/logger";
import {
  TaskResult,
  TaskState,
  type TaskSnapshot,
  type WatchTasksRequest,
  type WorkerServiceServer,
} from "../../gen/worker/v1/worker";
import type { WorkerProfile } from "../app/profile";
import type { FunctionSnapshot } from "../../runtime/functions/function-code-view";
import type { WorkerEvent } from "../core/worker-core-events";
import type { SnapshotReply, WorkerDecision } from "../core/worker-core-instructions";
import type { WorkerCore } from "../core/worker-core";
import { WorkerError } from "../core/worker-error";
import type { TaskExecutor, TaskReport } from "./task-executor";
import { planTask, type TaskPlan } from "./task-plan";
import { workerCodeToGRPC } from "./worker-code-to-grpc";

const MAX_WATCHED_TASKS = 10_000;

/** A monotonic clock in whole epoch milliseconds (snapshot timestamps are int64): WorkerCore's clock. */
export const monotonicNowMs = (): number => Math.floor(performance.timeOrigin + performance.now());

type Watch = { call: grpc.ServerWritableStream<WatchTasksRequest, TaskSnapshot>; ids: Set<string>; open: boolean };

/**
 * WorkerService is worker.v1.WorkerService over WorkerCore: it validates each request, feeds
 * the core one event at a time, and carries out the instructions (start and stop tasks in the
 * TaskExecutor, stream snapshots to WatchTasks, forget results). Events the executor reports
 * while instructions are being carried out are queued and applied after, because the core is
 * not re-entrant. One timer is armed at the core's next deadline.
 */
export class WorkerService {
  private readonly plans = new Map<string, TaskPlan>();
  private readonly watches = new Set<Watch>();
  private readonly queued: WorkerEvent[] = [];
  private applying = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private drainedWaiters: (() => void)[] = [];
  private drained = false;
  /** Tasks already counted in onTaskEnded (a terminal snapshot may be published again). */
  private readonly ended = new Set<string>();
  /** Called once per task that reaches a terminal state (metrics). */
  onTaskEnded: (state: TaskState) => void = () => {};

  constructor(
    private readonly core: WorkerCore,
    private readonly executor: () => TaskExecutor,
    private readonly profile: WorkerProfile,
    private readonly log: Logger,
    /** The function snapshot current now: a task pins it at activation. */
    /** Functions by name; `mustHave`: the name the task asks for (a miss re-reads FUNCTIONS_DIR). */
    private readonly functions: (mustHave?: string) => FunctionSnapshot | null = () => null,
    private readonly nowMs: () => number = monotonicNowMs,
  ) {}

  /** onTaskReport is the TaskExecutor's report callback. */
  onTaskReport = (r: TaskReport): void => {
    switch (r.type) {
      case "phase":
        return this.enqueue({ type: "taskPhaseEntered", taskId: r.taskId, phase: r.phase });
      case "counts":
        return this.enqueue({
          type: "taskCallCountsChanged",
          taskId: r.taskId,
          callsTotal: r.callsTotal,
          callsSucceeded: r.callsSucceeded,
          callsFailed: r.callsFailed,
          callsRetried: r.callsRetried,
        });
      case "succeeded":
        return this.enqueue({ type: "taskSucceeded", taskId: r.taskId });
      case "failed":
        return this.enqueue({ type: "taskFailed", taskId: r.taskId, error: { code: r.code, message: r.message } });
    }
  };

  /** startDraining stops taking slots; resolves when no task holds a slot any more. */
  drain(): Promise<void> {
    this.apply(this.core.startDraining(this.nowMs()));
    return this.drained ? Promise.resolve() : new Promise((r) => this.drainedWaiters.push(r));
  }

  /** endWatches closes every WatchTasks stream (shutdown). */
  endWatches(): void {
    for (const w of this.watches) if (w.open) w.call.end();
    this.watches.clear();
    if (this.timer) clearTimeout(this.timer);
  }

  handlers(): WorkerServiceServer {
    return {
      requestTaskSlot: (call, callback) => {
        const { taskId, ttlMs } = call.request;
        this.reply(callback, this.apply(this.core.requestTaskSlot(taskId, ttlMs, this.nowMs())));
      },
      submitTask: (call, callback) => {
        let plan: TaskPlan;
        try {
          const named = call.request.task?.functionCallConfig?.function?.name;
          plan = planTask(call.request.task, this.profile, this.functions(named || undefined));
        } catch (e) {
          return this.fail(callback, e);
        }
        // Kept before the core decides, so that startTask finds it; dropped again if nothing starts.
        const known = this.plans.has(plan.taskId);
        if (!known) this.plans.set(plan.taskId, plan);
        const decision = this.core.submitTask({ taskId: plan.taskId, timeoutMs: plan.timeoutMs }, call.request.slotId, this.nowMs());
        if (!known && !decision.instructions.some((i) => i.type === "startTask")) this.plans.delete(plan.taskId);
        // The client hears RUNNING before the task's first calls are dispatched.
        this.reply(callback, decision.reply);
        this.apply(decision);
      },
      cancelTask: (call, callback) => {
        const { taskId, reason } = call.request;
        this.reply(callback, this.apply(this.core.cancelTask(taskId, reason || "cancelled by the client", this.nowMs())));
      },
      getTaskResult: (call, callback) => {
        const reply = this.apply(this.core.queryTask(call.request.taskId, this.nowMs()));
        if (reply.err) return this.fail(callback, reply.err);
        const out = this.executor().output(call.request.taskId);
        callback(
          null,
          TaskResult.create({
            snapshot: reply.snapshot,
            returnValues: (out?.returnValues ?? []).map((v) => Buffer.from(JSON.stringify(v ?? null))),
            writes: [...(out?.writes ?? [])],
            firstError: out?.firstError,
          }),
        );
      },
      watchTasks: (call) => this.watch(call),
    };
  }

  private watch(call: grpc.ServerWritableStream<WatchTasksRequest, TaskSnapshot>): void {
    const ids = [...new Set(call.request.taskIds)];
    if (ids.length === 0) return void call.emit("error", grpcError(grpc.status.INVALID_ARGUMENT, "task_ids: at least one task id is required"));
    if (ids.length > MAX_WATCHED_TASKS) {
      return void call.emit("error", grpcError(grpc.status.INVALID_ARGUMENT, `task_ids: at most ${MAX_WATCHED_TASKS}, got ${ids.length}`));
    }
    // Snapshots still queued for existing watchers are older than what this watch reads now:
    // send them first, so this watcher never receives one after a newer one.
    this.flushPublishes();
    const current: TaskSnapshot[] = [];
    for (const id of ids) {
      const r = this.apply(this.core.queryTask(id, this.nowMs()));
      if (r.err) return void call.emit("error", grpcError(workerCodeToGRPC(r.err.code), r.err.message));
      current.push(r.snapshot);
    }
    const w: Watch = { call, ids: new Set(ids), open: true };
    for (const s of current) call.write(s);
    for (const s of current) if (TERMINAL_TASK_STATES.has(s.state)) w.ids.delete(s.taskId);
    if (w.ids.size === 0) {
      call.end();
      return;
    }
    this.watches.add(w);
    const close = () => {
      w.open = false;
      this.watches.delete(w);
    };
    call.on("cancelled", close);
    call.on("close", close);
  }

  /**
   * publish streams a snapshot to the task's watchers. Snapshots of one task published in the
   * same turn of the event loop are coalesced into the last one (a task that finishes reports
   * its counts, WRITE and SUCCEEDED in one turn); a terminal snapshot is never skipped.
   */
  private publish(snapshot: TaskSnapshot): void {
    if (this.watches.size === 0) return;
    const queuedBefore = this.pendingPublishes.size > 0;
    this.pendingPublishes.set(snapshot.taskId, snapshot);
    if (!queuedBefore) queueMicrotask(() => this.flushPublishes());
  }

  private readonly pendingPublishes = new Map<string, TaskSnapshot>();

  private flushPublishes(): void {
    const snapshots = [...this.pendingPublishes.values()];
    this.pendingPublishes.clear();
    for (const s of snapshots) this.publishNow(s);
  }

  private publishNow(snapshot: TaskSnapshot): void {
    for (const w of this.watches) {
      if (!w.open || !w.ids.has(snapshot.taskId)) continue;
      w.call.write(snapshot);
      if (TERMINAL_TASK_STATES.has(snapshot.state)) {
        w.ids.delete(snapshot.taskId);
        if (w.ids.size === 0) {
          w.open = false;
          this.watches.delete(w);
          w.call.end();
        }
      }
    }
  }

  private enqueue(event: WorkerEvent): void {
    this.queued.push(event);
    if (!this.applying) this.apply(undefined);
  }

  /**
   * apply carries out a decision's instructions in order, then any events they caused, and
   * re-arms the timer. It returns the decision's reply.
   */
  private apply<R>(decision: WorkerDecision<R> | undefined): R {
    const outer = !this.applying;
    this.applying = true;
    try {
      if (decision) this.carryOut(decision);
      if (outer) {
        while (this.queued.length > 0) this.carryOut(this.core.handle(this.queued.shift()!, this.nowMs()));
      }
    } finally {
      if (outer) {
        this.applying = false;
        this.armTimer();
      }
    }
    return decision?.reply as R;
  }

  private carryOut(decision: WorkerDecision<unknown>): void {
    if (decision.ignored) this.log.debug({ reason: decision.ignored.reason }, decision.ignored.message);
    for (const ins of decision.instructions) {
      switch (ins.type) {
        case "publishSnapshot":
          if (TERMINAL_TASK_STATES.has(ins.snapshot.state) && !this.ended.has(ins.snapshot.taskId)) {
            this.ended.add(ins.snapshot.taskId);
            this.onTaskEnded(ins.snapshot.state);
          }
          this.publish(ins.snapshot);
          break;
        case "startTask": {
          const plan = this.plans.get(ins.taskId);
          if (!plan) {
            this.log.error({ taskId: ins.taskId }, "startTask for a task without a plan");
            this.queued.push({ type: "taskFailed", taskId: ins.taskId, error: { code: ErrorCode.ErrInternal, message: "the worker lost the task's plan" } });
            break;
          }
          this.log.debug({ taskId: ins.taskId, slotId: ins.slotId, calls: plan.calls.total, deadlineMs: ins.deadlineMs }, "task started");
          this.executor().start(plan);
          break;
        }
        case "stopTask":
          this.log.info({ taskId: ins.taskId, slotId: ins.slotId, reason: ins.reason }, ins.message);
          this.executor().stop(ins.taskId);
          break;
        case "forgetTask":
          this.ended.delete(ins.taskId);
          this.plans.delete(ins.taskId);
          this.executor().forget(ins.taskId);
          break;
        case "reportDrained":
          this.drained = true;
          for (const w of this.drainedWaiters.splice(0)) w();
          break;
      }
    }
  }

  private armTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    const at = this.core.nextDeadlineMs();
    this.timer = at === null ? null : setTimeout(() => this.apply(this.core.tick(this.nowMs())), Math.max(0, Math.ceil(at - this.nowMs())));
  }

  private reply(callback: grpc.sendUnaryData<TaskSnapshot>, r: SnapshotReply): void {
    if (r.err) this.fail(callback, r.err);
    else callback(null, r.snapshot);
  }

  private fail(callback: (err: grpc.ServiceError) => void, e: unknown): void {
    if (e instanceof WorkerError) return callback(grpcError(workerCodeToGRPC(e.code), e.message));
    this.log.error({ err: e }, "worker request failed unexpectedly");
    callback(grpcError(grpc.status.INTERNAL, `internal error: ${(e as Error).message}`));
  }
}
