import * as grpc from "@grpc/grpc-js";
import { TERMINAL_TASK_STATES } from "../../common/terminal-task-states";
import { grpcError } from "../../common/grpc/grpc-server";
import type { Logger } from "../../common/logging/logger";
import {
  ListTasksResponse,
  SubmitTasksResponse,
  RequestTaskSlotsResponse,
  type TaskSlotOutcome,
  type SubmitTaskOutcome,
  type SubmitTaskRequest,
  TaskLogLine,
  TaskStory,
  TaskOutputs,
  TaskResult,
  type StreamTaskLogsRequest,
  type TaskSnapshot,
  type WatchTasksRequest,
  type WorkerServiceServer,
} from "../../gen/worker/v1/worker";
import type { SnapshotReply } from "../core/worker-core-instructions";
import { WorkerError } from "../core/worker-error";
import type { TaskLogEntry } from "../core/task-log-book";
import type { TaskOutput } from "./task-runner";
import type { WorkerDriver } from "./worker-driver";
import { workerCodeToGRPC } from "./worker-code-to-grpc";
import { ErrorCode } from "../../common/error-code";
import { taskIdProblem } from "../../common/task-id";
import { CLIENT_IDENTITY_HEADER } from "../../common/tls/client-identity-header";
import { callerKeyOf, parseCallerKey } from "../../common/tls/sub-identity";
import { callerOf } from "../../common/tls/grpc-tls";
import type { TlsSetting } from "../../common/tls/tls-setting";
import { ANONYMOUS, type Requester } from "../core/worker-core-events";

const MAX_WATCHED_TASKS = 10_000;
/** WORKER_MAX_WATCH_STREAMS' default. */
export const DEFAULT_MAX_WATCH_STREAMS = 4096;
/** SubmitTask's wait_ms: at most this long; and at most this many SubmitTasks wait at once (more answer at once). */
export const MAX_SUBMIT_WAIT_MS = 10_000;
const MAX_WAITING_SUBMITS = 10_000;
/** A waiting SubmitTask answers this long before its call's deadline, so that the answer arrives in time. */
const SUBMIT_WAIT_DEADLINE_MARGIN_MS = 50;
/**
 * A waiting SubmitTask's answer carries the task's outputs up to this size (return values and the
 * first error's text); larger ones stay for GetTaskResult or a with_results watch. gRPC clients
 * take 4 MiB answers by default, and a unary answer too large for its client would look like a
 * failed submit, which a client could retry as one.
 */
export const MAX_SUBMIT_ANSWER_OUTPUT_BYTES = 1024 * 1024;
/** SubmitTasks and RequestTaskSlots: at most this many tasks in one request. */
export const MAX_SUBMIT_BATCH = 1024;
/** StreamTaskLogs: at most this many lines of tail, and this many following streams open at once. */
const MAX_LOG_TAIL = 100_000;
const MAX_LOG_FOLLOWERS = 1_000;
/** ListTasks: the default and the largest limit. */
const DEFAULT_LIST_LIMIT = 1_000;
const MAX_LIST_LIMIT = 10_000;
/** The owner label a client may send (x-blockx-owner): printable, at most this long. */
const MAX_OWNER_LENGTH = 128;

/**
 * A WatchTasks stream, or a SubmitTask waiting for its task's end (wait_ms), and the tasks of it
 * not yet ended. `call` is where snapshots go: the stream, or the waiting SubmitTask's answer.
 */
type Watch = {
  call: { write(s: TaskSnapshot): unknown; end(): unknown };
  ids: Set<string>;
  open: boolean;
  /** The requester whose results terminal snapshots carry (with_results), else null. */
  results: Requester | null;
  /** terminal_only: the states before a task's end are not sent. */
  terminalOnly: boolean;
  /** Outputs larger than this are left out of the terminal snapshot (a waiting SubmitTask's answer). */
  maxOutputBytes: number;
};

/** outputsOf: a finished task's outputs as the wire carries them (GetTaskResult, and a watch's terminal snapshot). */
function outputsOf(output: TaskOutput | undefined): TaskOutputs {
  return TaskOutputs.create({
    returnValues: (output?.returnValues ?? []).map((v) => Buffer.from(JSON.stringify(v ?? null))),
    writes: [...(output?.writes ?? [])],
    firstError: output?.firstError,
  });
}
/** outputBytes: about what a TaskOutputs takes on the wire (its values and the first error's text). */
function outputBytes(o: TaskOutputs): number {
  let n = 0;
  for (const v of o.returnValues) n += v.length + 4;
  const e = o.firstError;
  if (e) n += e.message.length + e.traceback.length + e.callInput.length;
  return n;
}
type LogFollower = { call: grpc.ServerWritableStream<StreamTaskLogsRequest, TaskLogLine>; taskId: string; lastSeq: number; open: boolean };

/**
 * WorkerService is worker.v1.WorkerService and nothing else: it takes each request off the wire,
 * hands it to the WorkerDriver, and turns the answer into a reply or a gRPC status
 * (workerCodeToGRPC). It also keeps the WatchTasks streams, fed with the snapshots the driver
 * publishes.
 */
export class WorkerService {
  private readonly watches = new Set<Watch>();
  /** The open watches of each watched task id: a snapshot finds its watchers without a walk over every watch. */
  private readonly watchersOf = new Map<string, Set<Watch>>();
  private readonly followers = new Set<LogFollower>();
  /** SubmitTasks waiting for their task's end (wait_ms); bounded by MAX_WAITING_SUBMITS. */
  private waitingSubmits = 0;

  constructor(
    private readonly driver: WorkerDriver,
    private readonly log: Logger,
    private readonly tls: TlsSetting,
    /** WORKER_MAX_WATCH_STREAMS: WatchTasks streams open at once; more are RESOURCE_EXHAUSTED (each holds memory for as long as its client keeps it). */
    private readonly maxWatchStreams = DEFAULT_MAX_WATCH_STREAMS,
  ) {
    driver.onSnapshot = (s) => {
      this.publish(s);
      if (TERMINAL_TASK_STATES.has(s.state)) this.endFollowers(s.taskId);
    };
    driver.onLogLines = (taskId, lines) => this.followLines(taskId, lines);
  }

  /** endWatches closes every WatchTasks and StreamTaskLogs stream (shutdown). */
  endWatches(): void {
    for (const w of this.watches) if (w.open) w.call.end();
    this.watches.clear();
    this.watchersOf.clear();
    for (const f of this.followers) if (f.open) f.call.end();
    this.followers.clear();
  }

  handlers(): WorkerServiceServer {
    return {
      requestTaskSlot: (call, callback) => {
        const who = this.slotRequester(call);
        if (!who.ok) return callback(who.error);
        const { taskId, ttlMs } = call.request;
        this.reply(callback, this.driver.requestTaskSlot(taskId, ttlMs, who.requester));
      },
      requestTaskSlots: (call, callback) => {
        // The same rule as RequestTaskSlot: a Coordinator, naming the one client the whole batch is for.
        const who = this.slotRequester(call);
        if (!who.ok) return callback(who.error);
        const requests = call.request.requests;
        if (requests.length === 0) return callback(grpcError(grpc.status.INVALID_ARGUMENT, "requests: at least one is required"));
        if (requests.length > MAX_SUBMIT_BATCH) return callback(grpcError(grpc.status.INVALID_ARGUMENT, `requests: at most ${MAX_SUBMIT_BATCH} in one call, got ${requests.length}`));
        const outcomes = requests.map(({ taskId, ttlMs }): TaskSlotOutcome => {
          const r = this.driver.requestTaskSlot(taskId, ttlMs, who.requester);
          return r.err ? { taskId, snapshot: undefined, ...this.statusOf(r.err) } : { taskId, snapshot: r.snapshot, status: grpc.status.OK, message: "" };
        });
        callback(null, RequestTaskSlotsResponse.create({ outcomes }));
      },
      submitTask: (call, callback) => {
        const who = this.taskRequester(call, "SubmitTask");
        if (!who.ok) return callback(who.error);
        const { waitMs } = call.request;
        if (waitMs > MAX_SUBMIT_WAIT_MS) return callback(grpcError(grpc.status.INVALID_ARGUMENT, `wait_ms: at most ${MAX_SUBMIT_WAIT_MS}, got ${waitMs}`));
        void this.submitOne(call.request, who).then((outcome) => {
          if (outcome.status !== grpc.status.OK) return callback(grpcError(outcome.status, outcome.message));
          if (waitMs === 0) return callback(null, outcome.snapshot!);
          this.answerAtEnd(call, callback, outcome.snapshot!, who.requester, waitMs);
        });
      },
      submitTasks: (call, callback) => {
        const requests = call.request.tasks;
        if (requests.length === 0) return callback(grpcError(grpc.status.INVALID_ARGUMENT, "tasks: at least one task is required"));
        if (requests.length > MAX_SUBMIT_BATCH) return callback(grpcError(grpc.status.INVALID_ARGUMENT, `tasks: at most ${MAX_SUBMIT_BATCH} in one request, got ${requests.length}`));
        const who = this.taskRequester(call, "SubmitTasks");
        if (!who.ok) return callback(who.error);
        const seen = new Set<string>();
        const outcomes = requests.map((r): SubmitTaskOutcome | Promise<SubmitTaskOutcome> => {
          const taskId = r.task?.taskId ?? "";
          if (r.waitMs !== 0) return { taskId, snapshot: undefined, status: grpc.status.INVALID_ARGUMENT, message: "wait_ms: SubmitTask only (SubmitTasks answers at once; follow the tasks with WatchTasks)" };
          // A repeated id would be an idempotent hit anyway; refusing it keeps one answer per task.
          if (taskId !== "" && seen.has(taskId)) return { taskId, snapshot: undefined, status: grpc.status.INVALID_ARGUMENT, message: `task_id ${JSON.stringify(taskId)} appears more than once in the batch` };
          seen.add(taskId);
          return this.submitOne(r, who);
        });
        // Tasks writing tables claim their runs in the table store; the rest are answered at once.
        void Promise.all(outcomes).then((all) => callback(null, SubmitTasksResponse.create({ outcomes: all })));
      },
      cancelTask: (call, callback) => {
        const who = this.taskRequester(call, "CancelTask");
        if (!who.ok) return callback(who.error);
        const { taskId, reason } = call.request;
        void this.driver.cancelTask(taskId, reason || "cancelled by the client", who.requester).then((r) => this.reply(callback, r));
      },
      getTaskResult: (call, callback) => {
        const who = this.taskRequester(call, "GetTaskResult");
        if (!who.ok) return callback(who.error);
        const r = this.driver.result(call.request.taskId, who.requester);
        if (r.err) return this.fail(callback, r.err);
        callback(null, TaskResult.create({ snapshot: r.snapshot, ...outputsOf(r.output) }));
      },
      watchTasks: (call) => this.watch(call),
      streamTaskLogs: (call) => this.streamLogs(call),
      listTasks: (call, callback) => {
        const who = this.taskRequester(call, "ListTasks");
        if (!who.ok) return callback(who.error);
        const limit = call.request.limit === 0 ? DEFAULT_LIST_LIMIT : call.request.limit;
        if (limit > MAX_LIST_LIMIT) return callback(grpcError(grpc.status.INVALID_ARGUMENT, `limit: at most ${MAX_LIST_LIMIT}, got ${limit}`));
        const { tasks, truncated } = this.driver.listTasks(limit, who.requester);
        callback(
          null,
          ListTasksResponse.create({
            tasks: tasks.map((t) => ({
              snapshot: t.snapshot,
              owner: t.info?.owner ?? "",
              function: t.info?.function ?? "",
              logLinesDropped: t.info?.logLinesDropped ?? 0,
              callsTimed: t.times?.calls ?? 0,
              callSeconds: t.times?.seconds ?? 0,
            })),
            truncated,
          }),
        );
      },
      getTaskStory: (call, callback) => {
        const who = this.taskRequester(call, "GetTaskStory");
        if (!who.ok) return callback(who.error);
        const known = this.driver.queryTask(call.request.taskId, who.requester);
        // A malformed id (empty, too long) or another identity's task: said as such, not NOT_FOUND.
        if (known.err?.code === ErrorCode.ErrPermissionDenied || known.err?.code === ErrorCode.ErrInvalidArgument) return this.fail(callback, known.err);
        const entries = this.driver.story(call.request.taskId);
        if (entries.length === 0) return callback(grpcError(grpc.status.NOT_FOUND, `task ${JSON.stringify(call.request.taskId)} is not known here`));
        callback(null, TaskStory.create({ entries: entries.map((e) => ({ atMs: e.atMs, event: e.event, outcome: e.outcome })) }));
      },
    };
  }

  /**
   * streamLogs sends a task's kept log lines (its last `tail`, or all), then, with `follow`, each
   * new line as its call ends, and ends when the task is terminal or the client goes away.
   */
  private streamLogs(call: grpc.ServerWritableStream<StreamTaskLogsRequest, TaskLogLine>): void {
    const who = this.taskRequester(call, "StreamTaskLogs");
    if (!who.ok) return void call.emit("error", who.error);
    const { taskId, tail, follow } = call.request;
    const badId = taskIdProblem(taskId);
    if (badId) return void call.emit("error", grpcError(grpc.status.INVALID_ARGUMENT, badId));
    if (tail > MAX_LOG_TAIL) return void call.emit("error", grpcError(grpc.status.INVALID_ARGUMENT, `tail: at most ${MAX_LOG_TAIL}, got ${tail}`));
    const snap = this.driver.queryTask(taskId, who.requester);
    if (snap.err) return void call.emit("error", grpcError(workerCodeToGRPC(snap.err.code), snap.err.message));
    const live = follow && !TERMINAL_TASK_STATES.has(snap.snapshot.state);
    if (live && this.followers.size >= MAX_LOG_FOLLOWERS) {
      return void call.emit("error", grpcError(grpc.status.RESOURCE_EXHAUSTED, `at most ${MAX_LOG_FOLLOWERS} log streams may follow tasks at once; retry later`));
    }
    const read = this.driver.readLogs(taskId, { tail });
    const f: LogFollower = { call, taskId, lastSeq: 0, open: true };
    if (read) {
      read.entries.forEach((e, i) => this.sendLine(f, e, i === 0 ? read.droppedBefore : 0));
      f.lastSeq = read.lastSeq;
    }
    if (!live) return void call.end();
    this.followers.add(f);
    const close = () => {
      f.open = false;
      this.followers.delete(f);
    };
    call.on("cancelled", close);
    call.on("close", close);
  }

  private followLines(taskId: string, lines: readonly TaskLogEntry[]): void {
    for (const f of this.followers) {
      if (!f.open || f.taskId !== taskId) continue;
      for (const e of lines) if (e.seq > f.lastSeq) this.sendLine(f, e, e.seq - f.lastSeq - 1);
    }
  }

  private sendLine(f: LogFollower, e: TaskLogEntry, droppedBefore: number): void {
    f.lastSeq = e.seq;
    f.call.write(
      TaskLogLine.create({ seq: e.seq, timeMs: e.timeMs, callIndex: e.callIndex, attempt: e.attempt, input: e.input, stream: e.stream, level: e.level, text: e.text, droppedBefore }),
    );
  }

  private endFollowers(taskId: string): void {
    for (const f of this.followers) {
      if (f.taskId !== taskId) continue;
      f.open = false;
      this.followers.delete(f);
      f.call.end();
    }
  }

  private watch(call: grpc.ServerWritableStream<WatchTasksRequest, TaskSnapshot>): void {
    const who = this.taskRequester(call, "WatchTasks");
    if (!who.ok) return void call.emit("error", who.error);
    const ids = [...new Set(call.request.taskIds)];
    if (ids.length === 0) return void call.emit("error", grpcError(grpc.status.INVALID_ARGUMENT, "task_ids: at least one task id is required"));
    if (ids.length > MAX_WATCHED_TASKS) {
      return void call.emit("error", grpcError(grpc.status.INVALID_ARGUMENT, `task_ids: at most ${MAX_WATCHED_TASKS}, got ${ids.length}`));
    }
    for (const [i, id] of ids.entries()) {
      const badId = taskIdProblem(id, `task_ids[${i}]`);
      if (badId) return void call.emit("error", grpcError(grpc.status.INVALID_ARGUMENT, badId));
    }
    if (this.watches.size >= this.maxWatchStreams) {
      return void call.emit(
        "error",
        grpcError(grpc.status.RESOURCE_EXHAUSTED, `at most ${this.maxWatchStreams} WatchTasks streams may be open on this Worker at once (WORKER_MAX_WATCH_STREAMS); watch several tasks in one stream, poll GetTaskResult, or retry later`),
      );
    }
    // Snapshots still queued for existing watchers are older than what this watch reads now:
    // send them first, so this watcher never receives one after a newer one.
    this.flushPublishes();
    const current: TaskSnapshot[] = [];
    for (const id of ids) {
      const r = this.driver.queryTask(id, who.requester);
      if (r.err) return void call.emit("error", grpcError(workerCodeToGRPC(r.err.code), r.err.message));
      current.push(r.snapshot);
    }
    const w: Watch = { call, ids: new Set(ids), open: true, results: call.request.withResults ? who.requester : null, terminalOnly: call.request.terminalOnly, maxOutputBytes: Infinity };
    for (const s of current) this.send(w, s);
    for (const s of current) if (TERMINAL_TASK_STATES.has(s.state)) w.ids.delete(s.taskId);
    if (w.ids.size === 0) {
      call.end();
      return;
    }
    this.watches.add(w);
    for (const id of w.ids) {
      const set = this.watchersOf.get(id);
      if (set) set.add(w);
      else this.watchersOf.set(id, new Set([w]));
    }
    const close = () => {
      if (!w.open) return;
      w.open = false;
      this.watches.delete(w);
      for (const id of w.ids) this.unwatch(id, w);
    };
    call.on("cancelled", close);
    call.on("close", close);
  }

  /**
   * answerAtEnd answers a SubmitTask that asked to wait (wait_ms) with its task's terminal snapshot
   * and outputs, or with the snapshot of the moment once the wait (bounded by the call's deadline)
   * is over, the client has gone, or the Worker shuts down. It is a terminal_only, with_results
   * watch whose one message is the answer.
   */
  private answerAtEnd(call: grpc.ServerUnaryCall<SubmitTaskRequest, TaskSnapshot>, callback: grpc.sendUnaryData<TaskSnapshot>, accepted: TaskSnapshot, requester: Requester, waitMs: number): void {
    const deadline = call.getDeadline();
    const deadlineMs = deadline instanceof Date ? deadline.getTime() : deadline;
    const untilDeadlineMs = Number.isFinite(deadlineMs) ? deadlineMs - Date.now() - SUBMIT_WAIT_DEADLINE_MARGIN_MS : Infinity;
    const holdMs = Math.min(waitMs, untilDeadlineMs);
    if (TERMINAL_TASK_STATES.has(accepted.state) || holdMs <= 0 || this.waitingSubmits >= MAX_WAITING_SUBMITS) {
      return callback(null, this.withOutputs(accepted, requester, MAX_SUBMIT_ANSWER_OUTPUT_BYTES));
    }
    let answered = false;
    const answer = (s: TaskSnapshot) => {
      if (answered) return;
      answered = true;
      this.waitingSubmits--;
      clearTimeout(timer);
      w.open = false;
      this.watches.delete(w);
      for (const id of w.ids) this.unwatch(id, w);
      callback(null, s);
    };
    const now = () => {
      const r = this.driver.queryTask(accepted.taskId, requester);
      return r.err ? accepted : this.withOutputs(r.snapshot, requester, MAX_SUBMIT_ANSWER_OUTPUT_BYTES);
    };
    const w: Watch = {
      call: { write: (s: TaskSnapshot) => (answer(s), true), end: () => answer(now()) },
      ids: new Set([accepted.taskId]),
      open: true,
      results: requester,
      terminalOnly: true,
      maxOutputBytes: MAX_SUBMIT_ANSWER_OUTPUT_BYTES,
    };
    this.waitingSubmits++;
    const timer = setTimeout(() => answer(now()), holdMs);
    // Snapshots queued before this watch existed are older than `accepted`: sent first, to others.
    this.flushPublishes();
    this.watches.add(w);
    const set = this.watchersOf.get(accepted.taskId);
    if (set) set.add(w);
    else this.watchersOf.set(accepted.taskId, new Set([w]));
    call.on("cancelled", () => answer(accepted));
  }

  /**
   * withOutputs: a terminal snapshot with the task's outputs for `requester` (as GetTaskResult reads
   * them), unless they are larger than `maxBytes`; any other snapshot as it is.
   */
  private withOutputs(s: TaskSnapshot, requester: Requester, maxBytes: number): TaskSnapshot {
    if (!TERMINAL_TASK_STATES.has(s.state)) return s;
    const r = this.driver.result(s.taskId, requester);
    if (r.err) return s;
    const outputs = outputsOf(r.output);
    return outputBytes(outputs) > maxBytes ? s : { ...s, outputs };
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
    const watchers = this.watchersOf.get(snapshot.taskId);
    if (!watchers) return;
    const terminal = TERMINAL_TASK_STATES.has(snapshot.state);
    for (const w of terminal ? [...watchers] : watchers) {
      this.send(w, snapshot);
      if (!terminal) continue;
      w.ids.delete(snapshot.taskId);
      this.unwatch(snapshot.taskId, w);
      if (w.ids.size === 0) {
        w.open = false;
        this.watches.delete(w);
        w.call.end();
      }
    }
  }

  private unwatch(taskId: string, w: Watch): void {
    const set = this.watchersOf.get(taskId);
    if (!set) return;
    set.delete(w);
    if (set.size === 0) this.watchersOf.delete(taskId);
  }

  /**
   * send writes a snapshot to a watch (a terminal_only watch gets terminal ones only); a terminal
   * one with the task's outputs when the watch asked for them.
   */
  private send(w: Watch, snapshot: TaskSnapshot): void {
    const terminal = TERMINAL_TASK_STATES.has(snapshot.state);
    if (!terminal && w.terminalOnly) return;
    w.call.write(w.results === null ? snapshot : this.withOutputs(snapshot, w.results, w.maxOutputBytes));
  }

  /**
   * submitOne is the one per-task submit path (SubmitTask and each task of SubmitTasks): plan, the
   * run's claim for a task writing tables, WorkerCore's decision, start. Its outcome carries the gRPC
   * status SubmitTask answers with.
   */
  private async submitOne(request: SubmitTaskRequest, who: { requester: Requester; label: string }): Promise<SubmitTaskOutcome> {
    const taskId = request.task?.taskId ?? "";
    let reply: SnapshotReply | undefined;
    try {
      await this.driver.submitTask(request.task, request.slotId, who.label, who.requester, (r) => (reply = r), request.resubmit);
    } catch (e) {
      return { taskId, snapshot: undefined, ...this.statusOf(e) };
    }
    if (!reply) return { taskId, snapshot: undefined, status: grpc.status.INTERNAL, message: "internal error: the submit path gave no answer" };
    if (reply.err) return { taskId, snapshot: undefined, ...this.statusOf(reply.err) };
    return { taskId, snapshot: reply.snapshot, status: grpc.status.OK, message: "" };
  }

  private statusOf(e: unknown): { status: grpc.status; message: string } {
    if (e instanceof WorkerError) return { status: workerCodeToGRPC(e.code), message: e.message };
    this.log.error({ err: e }, "worker request failed unexpectedly");
    return { status: grpc.status.INTERNAL, message: `internal error: ${(e as Error).message}` };
  }

  /**
   * slotRequester: RequestTaskSlot comes from a Coordinator (under mTLS its certificate says so),
   * which names the client it reserves for in CLIENT_IDENTITY_HEADER; that client owns the slot.
   * The header is believed from a Coordinator only. Under BLOCKX_INSECURE: anonymous.
   */
  private slotRequester(call: grpc.ServerUnaryCall<unknown, unknown>): { ok: true; requester: Requester } | { ok: false; error: grpc.ServiceError } {
    const caller = callerOf(this.tls, call, ["coordinator"], "RequestTaskSlot");
    if (!caller.ok) return caller;
    if (caller.identity === null) return { ok: true, requester: ANONYMOUS };
    const raw = call.metadata.get(CLIENT_IDENTITY_HEADER)[0];
    const client = typeof raw === "string" ? parseCallerKey(raw) : null;
    if (client === null) {
      return { ok: false, error: grpcError(grpc.status.INVALID_ARGUMENT, `RequestTaskSlot: ${CLIENT_IDENTITY_HEADER} must name the client (client/NAME, admin/NAME, proxy/NAME or proxy/NAME/uid:UID), got ${JSON.stringify(raw ?? "")}`) };
    }
    return { ok: true, requester: { identity: client, admin: false } };
  }

  /**
   * taskRequester: every task RPC comes from a client, an admin or a proxy certificate, whose
   * identity (with the Unix user a proxy names: sub-identity.ts) is the requester and the owner
   * label. Under BLOCKX_INSECURE the requester is anonymous and the label is the unauthenticated
   * x-blockx-owner header (a name for `blockx tasks`, not a proof).
   */
  private taskRequester(
    call: { metadata: grpc.Metadata; getAuthContext?: grpc.ServerUnaryCall<unknown, unknown>["getAuthContext"] },
    method: string,
  ): { ok: true; requester: Requester; label: string } | { ok: false; error: grpc.ServiceError } {
    const caller = callerKeyOf(this.tls, call, method);
    if (!caller.ok) return caller;
    if (caller.key === null) return { ok: true, requester: ANONYMOUS, label: ownerOf(call.metadata) };
    return { ok: true, requester: { identity: caller.key, admin: caller.admin }, label: caller.key };
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

/**
 * ownerOf: the owner label the client sent in x-blockx-owner (the SDK and CLI send user@host), cut
 * to printable characters; not an authenticated identity (that comes with the trust boundary).
 */
function ownerOf(metadata: grpc.Metadata): string {
  const v = metadata.get("x-blockx-owner")[0];
  return typeof v === "string" ? v.replace(/[^\x20-\x7e]/g, "").slice(0, MAX_OWNER_LENGTH) : "";
}
