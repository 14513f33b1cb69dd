import * as grpc from "@grpc/grpc-js";
import { TERMINAL_TASK_STATES } from "../common/terminal-task-states";
import type { GetReservationOutcomesResponse, ReserveWorkerSlotResponse } from "../gen/coordinator/v1/coordinator";
import type { DebugInvokeResponse, InvokeResponse, PrecheckResponse } from "../gen/syncinvoker/v1/sync_invoker";
import {
  FunctionRef,
  TaskState,
  type ListTasksResponse,
  type Task,
  type TaskListEntry,
  type TaskLogLine,
  TaskResult,
  TaskSnapshot,
  type TaskStory,
} from "../gen/worker/v1/worker";
import { compileTlsSetting } from "../common/tls/tls-setting";
import { GrpcTransport, isServiceError, unary, type WorkerCalls } from "./adapters/grpc-transport";
import { loadClientConfig, type ClientConfig } from "./client-config";
import { clusterFor, resubmitByDefault, type Cluster } from "./core/cluster-selection";
import { ProgressMeter } from "./core/progress";
import { DEFAULT_RETRY_POLICY, ReservePolicy, type RetryableFailure } from "./core/retry-policy";
import { BlockxError } from "./sdk-error";
import { readRegisteredWorkers, type RegisteredWorker } from "./worker-registry";
import { readFollowerStatuses, type FollowerStatuses } from "./follower-statuses";
import { BatchRunner } from "./batch-runner";
import { detailsOf, submitMayHaveLanded, resultOf, finishedRun, validateTask, retryableFailure, toBlockxError, statusError, stateName, isTerminal, type TaskRef, type TaskHandle, type ClientEvent, type TaskStateName, type RunTaskOptions, type RunResult, type RunStart, type RunTasksOptions, type RunTasksEntry, type ClientClock, type TaskRuns } from "./task-run";

export { submitMayHaveLanded, resultOf, finishedRun, validateTask, retryableFailure, toBlockxError, statusError, stateName, isTerminal } from "./task-run";
export type { TaskRef, TaskHandle, ClientEvent, TaskStateName, RunTaskOptions, RunResult, RunStart, RunTasksOptions, RunTasksEntry, ClientClock } from "./task-run";
import { parseRunElsewhere } from "../common/run-elsewhere";



/**
 * The client's clock is monotonic: every interval it measures (a quiet stream, an unreachable
 * Worker, progress rates) and every deadline it keeps stays right when the wall clock is stepped
 * (NTP, a suspended laptop). Wall time enters only at the edges: a caller's absolute `deadlineMs`
 * (fromWall) and the deadlines handed to grpc-js, which compares them with Date.now() (grpcDeadline).
 */
const systemClock: ClientClock = {
  now: () => performance.timeOrigin + performance.now(),
  random: () => Math.random(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

const DEFAULT_TASK_TIMEOUT_MS = 300_000;
const RUN_MARGIN_MS = 60_000;
const POLL_INTERVAL_MS = 500;
/** A watch stream this quiet is checked with a GetTaskResult probe (a hung Worker sends nothing). */
const STREAM_QUIET_MS = 1_000;
/**
 * runTask's SubmitTask asks the Worker to answer at the task's end if that comes within this long
 * (wait_ms): a short task's result arrives with the answer, and no WatchTasks is opened. Not when
 * the caller follows progress (onProgress), which the watch delivers as it happens.
 */
export const SUBMIT_WAIT_MS = 1_000;

/**
 * olderRun notes a snapshot's run generation in `newest` and says whether it is of a run older than
 * the newest one heard of (0: a task that writes no table, or a Worker that predates the field).
 */
function olderRun(s: TaskSnapshot, newest: { generation: number }): boolean {
  const g = Number(s.runGeneration ?? 0);
  if (g === 0) return false;
  if (g < newest.generation) return true;
  newest.generation = g;
  return false;
}


/** How following a task ended: its result, or its Worker lost (`notFound`: the Worker answered that it does not know the task). */
type FollowOutcome = { kind: "terminal"; result: TaskResult } | { kind: "lost"; reason: string; notFound: boolean };

/**
 * BlockxClient is the TypeScript client of a BlockX cluster. `runTask` = reserve a slot through
 * a Coordinator, submit to that Worker, watch until terminal, following SYSTEM.md section 2's
 * retry rules, and resubmitting when the Worker running the task is lost (idempotent outputs
 * only, unless the caller opts in). Through `PROXY_SOCKET_PATH` every call goes via the proxy.
 */
export class BlockxClient implements TaskRuns {
  private readonly transport: GrpcTransport;

  constructor(
    readonly config: ClientConfig,
    private readonly clock: ClientClock = systemClock,
  ) {
    this.transport = new GrpcTransport(config.proxySocketPath, config.keepaliveTimeMs, compileTlsSetting(config));
  }

  /** fromEnv: a client configured like the CLI (BLOCKX_COORDINATOR_ADDRS, PROXY_SOCKET_PATH, ...). */
  static fromEnv(env: Readonly<Record<string, string | undefined>> = process.env): BlockxClient {
    return new BlockxClient(loadClientConfig(env));
  }

  close(): void {
    this.transport.close();
  }

  /** runTask runs a task to its terminal state; a FAILED task resolves (succeeded: false), it does not throw. */
  async runTask(task: Task, opts: RunTaskOptions = {}): Promise<RunResult> {
    validateTask(task);
    return this.runFrom(task, opts, {});
  }

  /**
   * runFrom runs a task from where a caller left it (the batch path hands over a task it submitted,
   * or one it could not place): with `start.handle`, that run is followed first; then every retry
   * and resubmission rule of runTask applies. Not for SDK users: validate first.
   * @internal
   */
  async runFrom(task: Task, opts: RunTaskOptions, start: RunStart): Promise<RunResult> {
    const cluster = clusterFor(task, opts.cluster);
    const resubmit = opts.resubmit ?? resubmitByDefault(task);
    const maxAttempts = opts.maxAttempts ?? this.config.maxAttempts;
    const deadlineMs = start.deadlineMs ?? this.deadlineOf(task, opts);
    const events: ClientEvent[] = start.events ?? [];
    const emit = (e: ClientEvent) => {
      events.push(e);
      opts.onEvent?.(e);
    };
    const workers: string[] = start.workers ?? [];
    let handed = start.handle;
    // Set once a Worker running the task was lost and the caller allows a rerun: the next submission
    // asks for a new run (SubmitTaskRequest.resubmit), fencing the lost one off.
    let resubmitting = false;
    // The newest run of the task this client has heard of (TaskSnapshot.run_generation): once it asked
    // for a new run, the end of an older one (a Worker that finished it unheard, then answered late)
    // is not its result: that run was superseded, and its rows may be partly replaced.
    const newest = { generation: 0 };
    for (let attempt = start.attempt ?? 1; ; attempt++) {
      let handle: TaskRef;
      if (handed) {
        handle = handed;
        handed = undefined;
      } else {
        const submitted = await this.reserveAndSubmit(task, cluster, deadlineMs, emit, attempt, opts.onProgress ? 0 : SUBMIT_WAIT_MS, resubmitting);
        workers.push(submitted.workerAddr);
        const superseded = olderRun(submitted.snapshot, newest);
        // The Worker answered at the task's end, with its outputs: nothing to follow.
        const answered = resultOf(submitted.snapshot);
        if (answered && !superseded) return finishedRun(task, cluster, answered, attempt, workers, events);
        handle = submitted;
      }
      const outcome = await this.follow(handle, deadlineMs, opts.onProgress, emit, newest);
      if (outcome.kind === "terminal") return finishedRun(task, cluster, outcome.result, attempt, workers, events);
      if (handle.uncertain && outcome.notFound && attempt < maxAttempts && this.clock.now() < deadlineMs) {
        // The submission never landed there: nothing of it runs anywhere but what the cluster's
        // claim of the task id would refuse, so a plain submission is safe (not a rerun).
        emit({ kind: "submitNotLanded", attempt, taskId: task.taskId, workerAddr: handle.workerAddr });
        continue;
      }
      const again = resubmit && attempt < maxAttempts && this.clock.now() < deadlineMs;
      resubmitting = again;
      emit({ kind: "workerLost", attempt, workerAddr: handle.workerAddr, reason: outcome.reason, resubmit: again });
      if (!again) {
        const why = !resubmit
          ? "not resubmitted (resubmit: false)"
          : attempt >= maxAttempts
            ? `gave up after ${attempt} attempts`
            : "the deadline has passed";
        throw new BlockxError("WORKER_LOST", `task ${task.taskId}: Worker ${handle.workerAddr} was lost (${outcome.reason}); ${why}`);
      }
    }
  }

  /**
   * runTasks runs many tasks (e.g. a backfill cut into ranges) with at most `concurrency` in
   * flight, through the batch path: one ReserveWorkerSlots per batch of up to `batchSize` tasks,
   * one SubmitTasks and one WatchTasks stream per Worker of the batch. A task the batch could not
   * place (no slot, a refused or lost submit, a lost Worker) continues alone under runTask's retry
   * and resubmission rules, so every rule holds per task. Settles every task, in input order.
   */
  async runTasks(tasks: readonly Task[], opts: RunTasksOptions = {}): Promise<RunTasksEntry[]> {
    return new BatchRunner(this, this.transport, this.clock, (capMs) => this.rpcDeadline(capMs)).run(tasks, opts);
  }

  /** deadlineOf: the wall-clock deadline of a run of `task` started now. @internal */
  deadlineOf(task: Task, opts: Pick<RunTaskOptions, "deadlineMs" | "timeoutMs">): number {
    return opts.deadlineMs !== undefined ? this.fromWall(opts.deadlineMs) : this.clock.now() + (opts.timeoutMs ?? (task.taskTimeoutMs || DEFAULT_TASK_TIMEOUT_MS) + RUN_MARGIN_MS);
  }

  /** submit reserves a slot and submits the task, with the retry rules; it does not wait for the task. */
  async submit(task: Task, opts: Pick<RunTaskOptions, "cluster" | "deadlineMs" | "timeoutMs" | "onEvent"> = {}): Promise<TaskHandle> {
    validateTask(task);
    return this.reserveAndSubmit(task, clusterFor(task, opts.cluster), this.deadlineOf(task, opts), (e) => opts.onEvent?.(e), 1);
  }

  /** watch follows a submitted task until it is terminal and returns its result; WORKER_LOST if its Worker went away. */
  async watch(ref: TaskRef, opts: Pick<RunTaskOptions, "deadlineMs" | "timeoutMs" | "onProgress" | "onEvent"> = {}): Promise<TaskResult> {
    const deadlineMs = opts.deadlineMs !== undefined ? this.fromWall(opts.deadlineMs) : this.clock.now() + (opts.timeoutMs ?? 8 * 3600_000);
    const outcome = await this.follow(ref, deadlineMs, opts.onProgress, (e) => opts.onEvent?.(e));
    if (outcome.kind === "lost") throw new BlockxError("WORKER_LOST", `task ${ref.taskId}: Worker ${ref.workerAddr} was lost (${outcome.reason})`);
    return outcome.result;
  }

  /** result asks the Worker for the task's result (its snapshot while still running). */
  async result(ref: TaskRef): Promise<TaskResult> {
    const w = this.transport.worker(ref.workerAddr);
    try {
      return await unary(w.client.getTaskResult.bind(w.client), { taskId: ref.taskId }, w.metadata(), this.rpcDeadline());
    } catch (e) {
      throw toBlockxError(e, `GetTaskResult ${ref.taskId} on ${ref.workerAddr}`);
    }
  }

  /** cancel stops the task; cancelling a finished task returns its final snapshot. */
  async cancel(ref: TaskRef, reason = "cancelled by client"): Promise<TaskSnapshot> {
    const w = this.transport.worker(ref.workerAddr);
    try {
      return await unary(w.client.cancelTask.bind(w.client), { taskId: ref.taskId, reason }, w.metadata(), this.rpcDeadline());
    } catch (e) {
      throw toBlockxError(e, `CancelTask ${ref.taskId} on ${ref.workerAddr}`);
    }
  }

  /** listTasks asks one Worker for its tasks (allocated, running, retained), newest first. */
  async listTasks(workerAddr: string, limit = 0): Promise<ListTasksResponse> {
    const w = this.transport.worker(workerAddr);
    try {
      return await unary(w.client.listTasks.bind(w.client), { limit }, w.metadata(), this.rpcDeadline());
    } catch (e) {
      throw toBlockxError(e, `ListTasks on ${workerAddr}`);
    }
  }

  /**
   * tasksEverywhere asks every Worker registered in etcd for its tasks, in parallel. A Worker that
   * does not answer is reported in `unreachable`, not an error: the others' tasks still count.
   */
  async tasksEverywhere(limitPerWorker = 0): Promise<{ tasks: (TaskListEntry & { workerAddr: string })[]; unreachable: { addr: string; message: string }[]; workers: RegisteredWorker[] }> {
    const workers = await readRegisteredWorkers(this.config);
    const answers = await Promise.allSettled(workers.map((w) => this.listTasks(w.addr, limitPerWorker)));
    const tasks: (TaskListEntry & { workerAddr: string })[] = [];
    const unreachable: { addr: string; message: string }[] = [];
    answers.forEach((a, i) => {
      const addr = workers[i]!.addr;
      if (a.status === "fulfilled") tasks.push(...a.value.tasks.map((t) => ({ ...t, workerAddr: addr })));
      else unreachable.push({ addr, message: (a.reason as Error).message });
    });
    tasks.sort((a, b) => (b.snapshot?.allocatedAtMs ?? 0) - (a.snapshot?.allocatedAtMs ?? 0));
    return { tasks, unreachable, workers };
  }

  /**
   * followers reads the status every running `blockx follow` publishes in etcd (its table, chain,
   * state, position, head, lag and last reorganisation), sorted by table and chain. Values that are
   * not a status are left out and their keys named in `skippedKeys`. UNREACHABLE as tasksEverywhere.
   */
  followers(): Promise<FollowerStatuses> {
    return readFollowerStatuses(this.config);
  }

  /**
   * reservationOutcomes asks every configured Coordinator (block and bundle) how it answered
   * ReserveWorkerSlot lately, in parallel. A Coordinator that does not answer carries its error,
   * so one down Coordinator does not hide the others. Through the proxy there is one per cluster.
   */
  async reservationOutcomes(limit = 20): Promise<CoordinatorOutcomes[]> {
    const targets: { cluster: Cluster; addrs: readonly string[] }[] = [
      { cluster: "block", addrs: this.config.coordinatorAddrs },
      { cluster: "bundle", addrs: this.config.bundleCoordinatorAddrs },
    ];
    const asks = targets.flatMap(({ cluster, addrs }) =>
      this.transport.reservers(cluster, addrs).map(async (r): Promise<CoordinatorOutcomes> => {
        try {
          return { cluster, addr: r.label, outcomes: await r.outcomes(limit, this.rpcDeadline()) };
        } catch (e) {
          return { cluster, addr: r.label, error: toBlockxError(e, `GetReservationOutcomes on ${r.label}`).message };
        }
      }),
    );
    return Promise.all(asks);
  }

  /**
   * locate finds which registered Worker has the task (asking each in parallel with GetTaskStory,
   * which carries no return values), so that a task id is enough to watch, cancel or read a task.
   * NOT_FOUND names how many Workers were asked, and which did not answer (one of them may hold it).
   */
  async locate(taskId: string): Promise<TaskRef> {
    const workers = await readRegisteredWorkers(this.config);
    const answers = await Promise.allSettled(workers.map((w) => this.story({ taskId, workerAddr: w.addr }).then(() => w.addr)));
    const found = answers.find((a) => a.status === "fulfilled");
    if (found) return { taskId, workerAddr: (found as PromiseFulfilledResult<string>).value };
    const silent = workers.filter((_, i) => (answers[i] as PromiseRejectedResult).reason?.code !== "NOT_FOUND").map((w) => w.addr);
    const unanswered = silent.length > 0 ? `; ${silent.length} did not answer (${silent.join(", ")}) and may hold it` : "";
    throw new BlockxError(
      "NOT_FOUND",
      `task ${taskId}: none of the ${workers.length} Workers registered in etcd at ${this.config.etcdEndpoints.join(",")} has it (finished longer ago than its retention, or never submitted)${unanswered}`,
    );
  }

  /** story asks the task's Worker for the task's story: its state changes and decisions with their times. */
  async story(ref: TaskRef): Promise<TaskStory> {
    const w = this.transport.worker(ref.workerAddr);
    try {
      return await unary(w.client.getTaskStory.bind(w.client), { taskId: ref.taskId }, w.metadata(), this.rpcDeadline());
    } catch (e) {
      throw toBlockxError(e, `GetTaskStory ${ref.taskId} on ${ref.workerAddr}`);
    }
  }

  /**
   * streamLogs hands a task's log lines to `onLine`: its last `tail` (0: all kept), then, with
   * `follow`, each new one until the task is terminal. Resolves when the stream ends, or at once
   * when `signal` aborts: the stream is cancelled then, so a reader that went away (a closed
   * dashboard page) holds no stream on the Worker until the task ends.
   */
  streamLogs(ref: TaskRef, o: { tail?: number; follow?: boolean; signal?: AbortSignal }, onLine: (line: TaskLogLine) => void): Promise<void> {
    const w = this.transport.worker(ref.workerAddr);
    return new Promise((resolve, reject) => {
      if (o.signal?.aborted) return resolve();
      const stream = w.client.streamTaskLogs({ taskId: ref.taskId, tail: o.tail ?? 0, follow: o.follow ?? false }, w.metadata());
      const onAbort = () => {
        stream.cancel();
        resolve();
      };
      o.signal?.addEventListener("abort", onAbort, { once: true });
      const done = () => o.signal?.removeEventListener("abort", onAbort);
      stream.on("data", (l: TaskLogLine) => onLine(l));
      stream.on("end", () => {
        done();
        resolve();
      });
      stream.on("error", (e) => {
        done();
        // A cancel we asked for ends as CANCELLED: the promise has resolved already.
        reject(toBlockxError(e, `StreamTaskLogs ${ref.taskId} on ${ref.workerAddr}`));
      });
    });
  }

  /** invoke runs one call now on the Sync Invoker; `debug` adds output, logs, IO trace and traceback. */
  async invoke(fn: Partial<FunctionRef>, args: unknown, opts: { timeoutMs?: number; debug?: boolean } = {}): Promise<InvokeResponse | DebugInvokeResponse> {
    const si = this.transport.syncInvoker(this.config.syncInvokerAddr);
    const req = { function: FunctionRef.fromPartial(fn), args: Buffer.from(JSON.stringify(args ?? null)), timeoutMs: opts.timeoutMs ?? 0 };
    const deadline = this.clock.now() + Math.max(this.config.rpcTimeoutMs, (opts.timeoutMs ?? 0) + 5000);
    try {
      return opts.debug ? await si.debugInvoke(req, this.grpcDeadline(deadline)) : await si.invoke(req, this.grpcDeadline(deadline));
    } catch (e) {
      throw toBlockxError(e, `Invoke on the Sync Invoker at ${this.config.syncInvokerAddr}`);
    }
  }

  /** precheck compiles and checks a function on the Sync Invoker without running it. */
  async precheck(fn: Partial<FunctionRef>): Promise<PrecheckResponse> {
    const c = this.transport.syncInvoker(this.config.syncInvokerAddr).client;
    try {
      return await unary(c.precheck.bind(c), { function: FunctionRef.fromPartial(fn) }, new grpc.Metadata(), this.rpcDeadline());
    } catch (e) {
      throw toBlockxError(e, `Precheck on the Sync Invoker at ${this.config.syncInvokerAddr}`);
    }
  }

  /** rpcDeadline: one RPC's deadline for grpc-js (wall clock), at most `capMs` (the client's clock). */
  private rpcDeadline(capMs = Infinity): number {
    return this.grpcDeadline(Math.min(capMs, this.clock.now() + this.config.rpcTimeoutMs));
  }

  /** grpcDeadline: a deadline on the client's (monotonic) clock as grpc-js wants it: wall-clock ms, as much time from now. */
  private grpcDeadline(deadlineMs: number): number {
    return Date.now() + (deadlineMs - this.clock.now());
  }

  /** fromWall: a caller's absolute wall-clock deadline on the client's clock, as much time from now. */
  private fromWall(wallMs: number): number {
    return this.clock.now() + (wallMs - Date.now());
  }

  /**
   * reserveAndSubmit loops reserve -> submit under the retry rules until submitted or the deadline.
   * With `waitMs`, SubmitTask waits up to that long for the task's end (its answer is then the
   * terminal snapshot with the outputs). A SubmitTask that fails once it may have reached the Worker
   * (the connection dropped, the deadline passed), waiting or not, is taken as submitted there,
   * uncertainly: the task may be running there, and following it first applies the lost-Worker
   * rules (resubmit only when allowed), where reserving afresh could run it twice. A Worker that
   * refuses the task because its run is current on another Worker (TASK_RUN_ELSEWHERE) hands back a
   * handle on that Worker: the task is followed there. `resubmit`: ask for a new run, fencing off
   * the earlier ones (after the Worker running it was lost).
   */
  private async reserveAndSubmit(task: Task, cluster: Cluster, deadlineMs: number, emit: (e: ClientEvent) => void, attempt: number, waitMs = 0, resubmit = false): Promise<TaskHandle> {
    const addrs = cluster === "block" ? this.config.coordinatorAddrs : this.config.bundleCoordinatorAddrs;
    const reservers = this.transport.reservers(cluster, addrs);
    const policy = new ReservePolicy({ ...DEFAULT_RETRY_POLICY, slotTtlMs: this.config.slotTtlMs }, reservers.length);
    let index = 0;
    let lastCapacityRefusal = "";
    const retry = async (failure: RetryableFailure, where: string, details: string): Promise<void> => {
      const d = policy.decide(failure, this.clock.now(), deadlineMs, this.clock.random());
      const last = `${failure} from ${where}: ${details}`;
      if (failure !== "UNAVAILABLE") lastCapacityRefusal = last;
      if (d.kind === "giveUp") {
        const what = d.code === "NO_CAPACITY" ? "no free slot" : "the cluster did not answer";
        // The last call may have timed out at the deadline: name the refusal that explains it too.
        const why = d.code === "NO_CAPACITY" && lastCapacityRefusal !== last ? `; last capacity refusal: ${lastCapacityRefusal}` : "";
        throw new BlockxError(d.code, `task ${task.taskId} (${cluster} cluster): ${what} before the deadline; last answer: ${last}${why}`, grpc.status[failure]);
      }
      emit({ kind: "reserveRefused", failure, coordinator: where, details, delayMs: Math.round(d.delayMs) });
      if (d.nextCoordinator) index++;
      await this.clock.sleep(d.delayMs);
    };
    for (;;) {
      const reserver = reservers[index % reservers.length]!;
      let slot: ReserveWorkerSlotResponse;
      try {
        slot = await reserver.reserve(task.taskId, this.rpcDeadline(deadlineMs));
      } catch (e) {
        const failure = retryableFailure(e);
        if (!failure) throw toBlockxError(e, `ReserveWorkerSlot on ${reserver.label}`);
        await retry(failure, reserver.label, detailsOf(e));
        continue;
      }
      policy.succeeded();
      const w = this.transport.worker(slot.workerAddr);
      emit({ kind: "submitting", attempt, taskId: task.taskId, workerAddr: slot.workerAddr, slotId: slot.slotId, coordinator: reserver.label });
      try {
        const snapshot = await w.submitTask({ task, slotId: slot.slotId, waitMs, resubmit }, w.metadata(), this.rpcDeadline(deadlineMs));
        emit({ kind: "submitted", attempt, taskId: task.taskId, workerAddr: slot.workerAddr, slotId: slot.slotId, coordinator: reserver.label, state: stateName(snapshot.state) });
        return { taskId: task.taskId, workerAddr: slot.workerAddr, slotId: slot.slotId, cluster, coordinator: reserver.label, snapshot };
      } catch (e) {
        if (!isServiceError(e)) throw e;
        const unknownAt = (workerAddr: string, uncertain: boolean): TaskHandle => {
          const unknown = TaskSnapshot.create({ taskId: task.taskId, slotId: slot.slotId, workerAddr, state: TaskState.TASK_STATE_UNSPECIFIED });
          return { taskId: task.taskId, workerAddr, slotId: slot.slotId, cluster, coordinator: reserver.label, snapshot: unknown, ...(uncertain ? { uncertain } : {}) };
        };
        if (submitMayHaveLanded(e)) {
          emit({ kind: "submitUncertain", attempt, taskId: task.taskId, workerAddr: slot.workerAddr, code: grpc.status[e.code] ?? String(e.code), details: e.details });
          return unknownAt(slot.workerAddr, true);
        }
        const elsewhere = e.code === grpc.status.ALREADY_EXISTS ? parseRunElsewhere(e.details) : null;
        if (elsewhere) {
          emit({ kind: "attached", attempt, taskId: task.taskId, refusedBy: slot.workerAddr, runningOn: elsewhere.workerAddr, state: elsewhere.state });
          return unknownAt(elsewhere.workerAddr, false);
        }
        emit({ kind: "submitRefused", code: grpc.status[e.code] ?? String(e.code), workerAddr: slot.workerAddr, details: e.details });
        // The slot expired, or belonged to an earlier incarnation of the Worker: reserve a fresh one.
        if (e.code === grpc.status.NOT_FOUND || e.code === grpc.status.FAILED_PRECONDITION) {
          await retry("UNAVAILABLE", slot.workerAddr, e.details);
          continue;
        }
        const failure = retryableFailure(e);
        if (!failure) throw toBlockxError(e, `SubmitTask ${task.taskId} on ${slot.workerAddr}`);
        await retry(failure, slot.workerAddr, e.details);
      }
    }
  }

  /**
   * follow streams WatchTasks until the task is terminal, falling back to GetTaskResult polling
   * when the stream breaks. The Worker counts as lost when it stays unreachable for
   * workerLostAfterMs, or answers NotFound (it restarted and forgot the task).
   */
  private async follow(ref: TaskRef, deadlineMs: number, onProgress: RunTaskOptions["onProgress"], emit: (e: ClientEvent) => void, newest = { generation: 0 }): Promise<FollowOutcome> {
    const meter = new ProgressMeter();
    const seen = (s: TaskSnapshot) => {
      olderRun(s, newest);
      onProgress?.(meter.update(s, this.clock.now()), s);
    };
    // The end of a run older than one this client has heard of: not the task's result (superseded).
    const superseded = (r: TaskResult): FollowOutcome | null =>
      r.snapshot && olderRun(r.snapshot, newest)
        ? { kind: "lost", reason: `${ref.workerAddr} ended run ${r.snapshot.runGeneration} of the task, which a newer run (${newest.generation}) had replaced`, notFound: false }
        : null;
    const w = this.transport.worker(ref.workerAddr);
    let streaming = true;
    let unreachableSinceMs: number | undefined;
    for (;;) {
      if (this.clock.now() >= deadlineMs) {
        throw new BlockxError("DEADLINE_EXCEEDED", `task ${ref.taskId} on ${ref.workerAddr} was still running at the caller's deadline`);
      }
      let terminalSeen = false;
      let streamed: TaskResult | undefined;
      // While the Worker is unreachable only the polls (each with a deadline) run: a new stream
      // to a hung Worker could wait for its connection without end.
      if (streaming && unreachableSinceMs === undefined) {
        const { err, silentSinceMs } = await this.stream(w, [ref.taskId], deadlineMs, (s) => {
          unreachableSinceMs = undefined;
          seen(s);
          if (TERMINAL_TASK_STATES.has(s.state)) terminalSeen = true;
          streamed ??= resultOf(s);
        });
        // The terminal snapshot carried the outputs (a Worker that knows with_results): no GetTaskResult.
        if (streamed) return superseded(streamed) ?? { kind: "terminal", result: streamed };
        if (err) {
          emit({ kind: "watchFailed", workerAddr: ref.workerAddr, code: grpc.status[err.code] ?? String(err.code), details: err.details });
          if (err.code === grpc.status.UNIMPLEMENTED) streaming = false;
        }
        if (silentSinceMs !== undefined && this.clock.now() - silentSinceMs >= this.config.workerLostAfterMs) {
          return { kind: "lost", reason: `no answer for ${this.clock.now() - silentSinceMs} ms (hung?): ${err?.details ?? ""}`, notFound: false };
        }
      }
      try {
        const result = await unary(w.client.getTaskResult.bind(w.client), { taskId: ref.taskId }, w.metadata(), this.rpcDeadline(deadlineMs));
        unreachableSinceMs = undefined;
        if (result.snapshot && TERMINAL_TASK_STATES.has(result.snapshot.state)) {
          if (!terminalSeen) seen(result.snapshot);
          return superseded(result) ?? { kind: "terminal", result };
        }
        if (result.snapshot) seen(result.snapshot);
      } catch (e) {
        if (!isServiceError(e)) throw e;
        if (e.code === grpc.status.NOT_FOUND) return { kind: "lost", reason: `the Worker no longer knows the task: ${e.details}`, notFound: true };
        if (!retryableFailure(e)) throw toBlockxError(e, `GetTaskResult ${ref.taskId} on ${ref.workerAddr}`);
        unreachableSinceMs ??= this.clock.now();
        if (this.clock.now() - unreachableSinceMs >= this.config.workerLostAfterMs) {
          return { kind: "lost", reason: `unreachable for ${this.config.workerLostAfterMs} ms: ${e.details}`, notFound: false };
        }
      }
      await this.clock.sleep(unreachableSinceMs === undefined ? POLL_INTERVAL_MS : POLL_INTERVAL_MS / 2);
    }
  }

  /**
   * stream runs one WatchTasks call over `taskIds`; resolves with its error, if any. A hung Worker
   * (stopped, not dead) keeps its connection open and just says nothing, so a stream quiet for
   * STREAM_QUIET_MS is probed with GetTaskResult of a task not yet seen terminal: a probe
   * unanswered within workerLostAfterMs ends the stream, with `silentSinceMs` (when the probe was
   * sent) for the caller to judge; a probe that finds that task terminal ends it too (the caller
   * reads the results). `terminalOnly` asks the Worker for terminal snapshots only (a caller that
   * shows no progress: one message per task instead of two or more). @internal (the batch path
   * watches its tasks with it)
   */
  stream(
    w: WorkerCalls,
    taskIds: readonly string[],
    deadlineMs: number,
    onSnapshot: (s: TaskSnapshot) => void,
    o: { terminalOnly?: boolean } = {},
  ): Promise<{ err?: grpc.ServiceError; silentSinceMs?: number }> {
    return new Promise((resolve) => {
      let settled = false;
      let heardMs = this.clock.now();
      let probing = false;
      const open = new Set(taskIds);
      const call = w.client.watchTasks({ taskIds: [...taskIds], withResults: true, terminalOnly: o.terminalOnly ?? false }, w.metadata(), { deadline: this.grpcDeadline(deadlineMs) });
      const finish = (r: { err?: grpc.ServiceError; silentSinceMs?: number }) => {
        if (settled) return;
        settled = true;
        clearInterval(watchdog);
        call.cancel();
        resolve(r);
      };
      const probe = () => {
        if (settled || probing || this.clock.now() - heardMs < STREAM_QUIET_MS) return;
        const taskId = open.values().next().value;
        if (taskId === undefined) return;
        probing = true;
        const sentMs = this.clock.now();
        unary(w.client.getTaskResult.bind(w.client), { taskId }, w.metadata(), this.grpcDeadline(Math.min(deadlineMs, sentMs + this.config.workerLostAfterMs))).then(
          (res) => {
            probing = false;
            heardMs = this.clock.now();
            // A terminal state the stream missed: let the caller read the result.
            if (res.snapshot && TERMINAL_TASK_STATES.has(res.snapshot.state)) finish({});
          },
          (e: unknown) => {
            probing = false;
            if (isServiceError(e)) finish({ err: e, ...(retryableFailure(e) ? { silentSinceMs: sentMs } : {}) });
          },
        );
      };
      const watchdog = setInterval(probe, STREAM_QUIET_MS / 4);
      call.on("data", (s: TaskSnapshot) => {
        heardMs = this.clock.now();
        if (TERMINAL_TASK_STATES.has(s.state)) open.delete(s.taskId);
        onSnapshot(s);
      });
      call.on("error", (e: grpc.ServiceError) => finish({ err: e }));
      call.on("end", () => finish({}));
    });
  }
}


/** One Coordinator's answer to GetReservationOutcomes, or why there is none. */
export type CoordinatorOutcomes = { readonly cluster: Cluster; readonly addr: string } & (
  | { readonly outcomes: GetReservationOutcomesResponse; readonly error?: undefined }
  | { readonly error: string; readonly outcomes?: undefined }
);
