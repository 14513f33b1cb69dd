import * as grpc from "@grpc/grpc-js";
import { TERMINAL_TASK_STATES } from "../common/terminal-task-states";
import type { Task, TaskResult, TaskSnapshot } from "../gen/worker/v1/worker";
import { type GrpcTransport, isServiceError, unary, type WorkerCalls } from "./adapters/grpc-transport";
import {
  type TaskRuns,
  type ClientClock,
  type ClientEvent,
  finishedRun,
  resultOf,
  type RunStart,
  type RunTasksEntry,
  type RunTasksOptions,
  retryableFailure,
  stateName,
  statusError,
  submitMayHaveLanded,
  toBlockxError,
  validateTask,
} from "./task-run";
import { parseRunElsewhere } from "../common/run-elsewhere";
import { clusterFor, type Cluster } from "./core/cluster-selection";
import { ProgressMeter } from "./core/progress";
import { BlockxError } from "./sdk-error";

/** The largest batch the Coordinator's ReserveWorkerSlots and the Worker's SubmitTasks take. */
export const MAX_BATCH_SIZE = 1024;
const DEFAULT_BATCH_SIZE = 256;
const DEFAULT_CONCURRENCY = 4;

/** One task of the batch path: where it is in the caller's list, and what happened to it so far. */
interface Item {
  readonly index: number;
  readonly task: Task;
  readonly cluster: Cluster;
  readonly deadlineMs: number;
  readonly events: ClientEvent[];
  readonly emit: (e: ClientEvent) => void;
}

interface Placed {
  readonly item: Item;
  readonly workerAddr: string;
  readonly slotId: string;
  readonly coordinator: string;
}

/**
 * BatchRunner is runTasks' batch path: it keeps at most `concurrency` tasks in flight and sends
 * them in batches (one ReserveWorkerSlots, then per Worker one SubmitTasks and one WatchTasks
 * stream whose terminal snapshots carry the results); a batch of one task takes runTask's path.
 * Whatever a batch cannot settle cleanly goes to the client's single-task path (runFrom) for that
 * task alone: a grant refused (no slot, not ready, uncertain), a submit refused or unanswered, a
 * watch that broke before the task ended.
 * So each task gets runTask's retry, backoff and resubmission rules, and idempotency by task id
 * holds as it does for runTask (a task handed over with its handle is followed, not resubmitted).
 */
export class BatchRunner {
  constructor(
    private readonly client: TaskRuns,
    private readonly transport: GrpcTransport,
    private readonly clock: ClientClock,
    private readonly rpcDeadline: (capMs: number) => number,
  ) {}

  async run(tasks: readonly Task[], opts: RunTasksOptions): Promise<RunTasksEntry[]> {
    const out: RunTasksEntry[] = new Array(tasks.length);
    const concurrency = Math.max(1, Math.floor(opts.concurrency ?? DEFAULT_CONCURRENCY));
    const batchSize = Math.max(1, Math.min(MAX_BATCH_SIZE, Math.floor(opts.batchSize ?? DEFAULT_BATCH_SIZE)));
    // A batch is sent once a quarter of it can go: fewer, larger batches without starving the window.
    const launchAt = Math.max(1, Math.ceil(Math.min(batchSize, concurrency) / 4));
    const queues: Record<Cluster, number[]> = { block: [], bundle: [] };
    /** Repeats of a task id already queued run alone after it (an idempotent hit or a rerun, as with runTask). */
    const repeats: number[] = [];
    const seen = new Set<string>();
    let unsettled = tasks.length;
    let inflight = 0;
    let resolveAll: () => void = () => {};
    const allSettled = new Promise<void>((r) => (resolveAll = r));
    const settle = (i: number, entry: RunTasksEntry) => {
      out[i] = entry;
      opts.onSettled?.(entry);
      if (--unsettled === 0) resolveAll();
    };
    const failed = (i: number, e: unknown): RunTasksEntry => ({ task: tasks[i]!, ok: false, error: e instanceof BlockxError ? e : new BlockxError("RPC_FAILED", String(e)) });

    tasks.forEach((task, i) => {
      try {
        validateTask(task);
      } catch (e) {
        return settle(i, failed(i, e));
      }
      if (seen.has(task.taskId)) return void repeats.push(i);
      seen.add(task.taskId);
      queues[clusterFor(task, opts.cluster)].push(i);
    });
    if (unsettled === 0) return out;

    const itemOf = (i: number): Item => {
      const task = tasks[i]!;
      const events: ClientEvent[] = [];
      return {
        index: i,
        task,
        cluster: clusterFor(task, opts.cluster),
        deadlineMs: this.client.deadlineOf(task, opts),
        events,
        emit: (e) => {
          events.push(e);
          opts.onEvent?.(e);
        },
      };
    };
    const done = (i: number) => (entry: RunTasksEntry) => {
      inflight--;
      settle(i, entry);
      pump();
    };
    const pump = () => {
      for (;;) {
        const free = concurrency - inflight;
        const cluster: Cluster | undefined = queues.block.length > 0 ? "block" : queues.bundle.length > 0 ? "bundle" : undefined;
        if (cluster === undefined) {
          // Repeats go once every first occurrence has settled, so they find its result.
          if (repeats.length > 0 && inflight === 0) {
            const i = repeats.shift()!;
            inflight++;
            this.client.runFrom(tasks[i]!, opts, {}).then((run) => done(i)({ task: tasks[i]!, ok: true, run }), (e: unknown) => done(i)(failed(i, e)));
            continue;
          }
          return;
        }
        const queue = queues[cluster];
        if (free < Math.min(launchAt, queue.length)) return;
        const n = Math.min(batchSize, free, queue.length);
        const batch = queue.splice(0, n).map(itemOf);
        inflight += n;
        void this.runBatch(batch, cluster, opts, (item, entry) => done(item.index)(entry));
      }
    };
    pump();
    await allSettled;
    return out;
  }

  /** runBatch places one batch and settles each of its tasks through `settled` (never throws). */
  private async runBatch(batch: Item[], cluster: Cluster, opts: RunTasksOptions, settled: (item: Item, entry: RunTasksEntry) => void): Promise<void> {
    const alone = (item: Item, start: RunStart = {}) =>
      this.client.runFrom(item.task, opts, { deadlineMs: item.deadlineMs, events: item.events, ...start }).then(
        (run) => settled(item, { task: item.task, ok: true, run }),
        (e: unknown) => settled(item, { task: item.task, ok: false, error: toBlockxError(e, `task ${item.task.taskId}`) }),
      );
    // A batch of one costs three calls (ReserveWorkerSlots, SubmitTasks, a WatchTasks stream) where
    // runTask's path costs two (its SubmitTask answers at a short task's end): it goes that way.
    if (batch.length === 1) return alone(batch[0]!);
    const placed = await this.reserve(batch, cluster, settled, alone);
    const byWorker = new Map<string, Placed[]>();
    for (const p of placed) {
      const list = byWorker.get(p.workerAddr);
      if (list) list.push(p);
      else byWorker.set(p.workerAddr, [p]);
    }
    await Promise.all([...byWorker].map(([addr, list]) => this.submitAndWatch(addr, list, cluster, opts, settled, alone)));
  }

  /** reserve asks a Coordinator for the batch's slots; a task without a grant goes on alone (or fails: invalid). */
  private async reserve(batch: Item[], cluster: Cluster, settled: (item: Item, entry: RunTasksEntry) => void, alone: (item: Item) => Promise<void>): Promise<Placed[]> {
    const addrs = cluster === "block" ? this.client.config.coordinatorAddrs : this.client.config.bundleCoordinatorAddrs;
    const reservers = this.transport.reservers(cluster, addrs);
    // Batches take turns among the Coordinators; a Coordinator that does not answer costs one batch a detour, not a failure.
    const reserver = reservers[Math.floor(this.clock.random() * reservers.length)] ?? reservers[0];
    if (!reserver) {
      for (const item of batch) void alone(item);
      return [];
    }
    const deadline = this.rpcDeadline(Math.min(...batch.map((b) => b.deadlineMs)));
    let grants;
    try {
      grants = (await reserver.reserveMany(batch.map((b) => b.task.taskId), deadline)).grants;
    } catch (e) {
      const detail = isServiceError(e) ? e.details : String(e);
      for (const item of batch) {
        const failure = retryableFailure(e);
        if (failure) item.emit({ kind: "reserveRefused", failure, coordinator: reserver.label, details: `ReserveWorkerSlots: ${detail}`, delayMs: 0 });
        void alone(item);
      }
      return [];
    }
    const placed: Placed[] = [];
    batch.forEach((item, k) => {
      const g = grants[k];
      if (!g || g.taskId !== item.task.taskId) return void alone(item);
      if (g.status === grpc.status.OK && g.slotId !== "") return void placed.push({ item, workerAddr: g.workerAddr, slotId: g.slotId, coordinator: reserver.label });
      if (g.status === grpc.status.INVALID_ARGUMENT) return settled(item, { task: item.task, ok: false, error: statusError(g.status, g.message, `ReserveWorkerSlot on ${reserver.label}`) });
      // No slot, not ready, uncertain: the single path's backoff and rules take it from here.
      void alone(item);
    });
    return placed;
  }

  /** submitAndWatch submits one Worker's share of the batch in one call and follows those tasks on one stream. */
  private async submitAndWatch(
    addr: string,
    list: Placed[],
    cluster: Cluster,
    opts: RunTasksOptions,
    settled: (item: Item, entry: RunTasksEntry) => void,
    alone: (item: Item, start?: RunStart) => Promise<void>,
  ): Promise<void> {
    const w = this.transport.worker(addr);
    const deadline = Math.min(...list.map((p) => p.item.deadlineMs));
    let outcomes;
    try {
      outcomes = (await w.submitTasks({ tasks: list.map((p) => ({ task: p.item.task, slotId: p.slotId, waitMs: 0, resubmit: false })) }, w.metadata(), this.rpcDeadline(deadline))).outcomes;
    } catch (e) {
      const code = isServiceError(e) ? (grpc.status[e.code] ?? String(e.code)) : "UNKNOWN";
      const details = isServiceError(e) ? e.details : String(e);
      for (const p of list) {
        if (isServiceError(e) && submitMayHaveLanded(e)) {
          // Unanswered once it may have reached the Worker (which may have started some): like a
          // lost SubmitTask answer, each task is followed there first, never submitted elsewhere as new.
          p.item.emit({ kind: "submitUncertain", attempt: 1, taskId: p.item.task.taskId, workerAddr: addr, code, details });
          void alone(p.item, { handle: { taskId: p.item.task.taskId, workerAddr: addr, uncertain: true }, attempt: 1, workers: [addr] });
        } else {
          p.item.emit({ kind: "submitRefused", code, workerAddr: addr, details });
          void alone(p.item);
        }
      }
      return;
    }
    const running = new Map<string, { placed: Placed; meter: ProgressMeter }>();
    list.forEach((p, k) => {
      const o = outcomes[k];
      if (!o || o.taskId !== p.item.task.taskId) return void alone(p.item);
      if (o.status === grpc.status.OK) {
        p.item.emit({ kind: "submitted", attempt: 1, taskId: p.item.task.taskId, workerAddr: addr, slotId: p.slotId, coordinator: p.coordinator, state: stateName(o.snapshot?.state) });
        running.set(p.item.task.taskId, { placed: p, meter: new ProgressMeter() });
        return;
      }
      const elsewhere = o.status === grpc.status.ALREADY_EXISTS ? parseRunElsewhere(o.message) : null;
      if (elsewhere) {
        // The task id's run is current on another Worker: followed there, not run twice.
        p.item.emit({ kind: "attached", attempt: 1, taskId: p.item.task.taskId, refusedBy: addr, runningOn: elsewhere.workerAddr, state: elsewhere.state });
        return void alone(p.item, { handle: { taskId: p.item.task.taskId, workerAddr: elsewhere.workerAddr }, attempt: 1, workers: [elsewhere.workerAddr] });
      }
      p.item.emit({ kind: "submitRefused", code: grpc.status[o.status] ?? String(o.status), workerAddr: addr, details: o.message });
      // Slot expired or from an earlier incarnation, or a retryable refusal: the single path reserves afresh.
      const again = o.status === grpc.status.NOT_FOUND || o.status === grpc.status.FAILED_PRECONDITION || retryableFailure({ code: o.status, details: o.message, message: o.message });
      if (again) return void alone(p.item);
      settled(p.item, { task: p.item.task, ok: false, error: statusError(o.status, o.message, `SubmitTask ${p.item.task.taskId} on ${addr}`) });
    });
    if (running.size === 0) return;
    const reading: Promise<void>[] = [];
    const handOver = (placed: Placed) => alone(placed.item, { handle: { taskId: placed.item.task.taskId, workerAddr: addr }, attempt: 1, workers: [addr] });
    // Without onProgress only the tasks' ends matter: the Worker sends nothing before them.
    const terminalOnly = opts.onProgress === undefined;
    await this.client.stream(w, [...running.keys()], deadline, (s: TaskSnapshot) => {
      const r = running.get(s.taskId);
      if (!r) return;
      opts.onProgress?.(r.meter.update(s, this.clock.now()), s);
      if (!TERMINAL_TASK_STATES.has(s.state)) return;
      running.delete(s.taskId);
      const streamed = resultOf(s);
      if (streamed) return void settled(r.placed.item, { task: r.placed.item.task, ok: true, run: finishedRun(r.placed.item.task, cluster, streamed, 1, [addr], r.placed.item.events) });
      reading.push(
        this.result(w, s.taskId, r.placed.item.deadlineMs).then(
          (result) => settled(r.placed.item, { task: r.placed.item.task, ok: true, run: finishedRun(r.placed.item.task, cluster, result, 1, [addr], r.placed.item.events) }),
          () => handOver(r.placed),
        ),
      );
    }, { terminalOnly });
    // Whatever the stream did not see end (it broke, the Worker hung or went away) is followed alone.
    for (const r of running.values()) void handOver(r.placed);
    await Promise.all(reading);
  }

  private async result(w: WorkerCalls, taskId: string, deadlineMs: number): Promise<TaskResult> {
    const result = await unary(w.client.getTaskResult.bind(w.client), { taskId }, w.metadata(), this.rpcDeadline(deadlineMs));
    if (!result.snapshot || !TERMINAL_TASK_STATES.has(result.snapshot.state)) throw new Error("not terminal yet");
    return result;
  }
}
