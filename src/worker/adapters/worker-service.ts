import * as grpc from "@grpc/grpc-js";
import { TERMINAL_TASK_STATES } from "../../common/terminal-task-states";
import { grpcError } from "../../common/grpc/grpc-server";
import type { Logger } from "../../common/logging/logger";
import {
  TaskResult,
  type TaskSnapshot,
  type WatchTasksRequest,
  type WorkerServiceServer,
} from "../../gen/worker/v1/worker";
import type { SnapshotReply } from "../core/worker-core-instructions";
import { WorkerError } from "../core/worker-error";
import type { WorkerDriver } from "./worker-driver";
import { workerCodeToGRPC } from "./worker-code-to-grpc";

const MAX_WATCHED_TASKS = 10_000;

type Watch = { call: grpc.ServerWritableStream<WatchTasksRequest, TaskSnapshot>; ids: Set<string>; open: boolean };

/**
 * WorkerService is worker.v1.WorkerService and nothing else: it takes each request off the wire,
 * hands it to the WorkerDriver, and turns the answer into a reply or a gRPC status
 * (workerCodeToGRPC). It also keeps the WatchTasks streams, fed with the snapshots the driver
 * publishes.
 */
export class WorkerService {
  private readonly watches = new Set<Watch>();

  constructor(
    private readonly driver: WorkerDriver,
    private readonly log: Logger,
  ) {
    driver.onSnapshot = (s) => this.publish(s);
  }

  /** endWatches closes every WatchTasks stream (shutdown). */
  endWatches(): void {
    for (const w of this.watches) if (w.open) w.call.end();
    this.watches.clear();
  }

  handlers(): WorkerServiceServer {
    return {
      requestTaskSlot: (call, callback) => {
        const { taskId, ttlMs } = call.request;
        this.reply(callback, this.driver.requestTaskSlot(taskId, ttlMs));
      },
      submitTask: (call, callback) => {
        try {
          this.driver.submitTask(call.request.task, call.request.slotId, (r) => this.reply(callback, r));
        } catch (e) {
          this.fail(callback, e);
        }
      },
      cancelTask: (call, callback) => {
        const { taskId, reason } = call.request;
        this.reply(callback, this.driver.cancelTask(taskId, reason || "cancelled by the client"));
      },
      getTaskResult: (call, callback) => {
        const r = this.driver.result(call.request.taskId);
        if (r.err) return this.fail(callback, r.err);
        callback(
          null,
          TaskResult.create({
            snapshot: r.snapshot,
            returnValues: (r.output?.returnValues ?? []).map((v) => Buffer.from(JSON.stringify(v ?? null))),
            writes: [...(r.output?.writes ?? [])],
            firstError: r.output?.firstError,
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
      const r = this.driver.queryTask(id);
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
