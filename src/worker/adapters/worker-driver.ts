import type { Logger } from "../../common/logging/logger";
import type { NowMs } from "../../common/clock/monotonic-clock";
import { TERMINAL_TASK_STATES } from "../../common/terminal-task-states";
import { type Task, type TaskSnapshot, TaskState } from "../../gen/worker/v1/worker";
import type { TaskLogEntry } from "../core/task-log-book";
import { writesTables, type TaskPlan } from "../core/task-plan";
import type { RunFence } from "../../outputs/stores/run-fence";
import type { WorkerCore } from "../core/worker-core";
import type { Requester, WorkerEvent } from "../core/worker-core-events";
import type { SnapshotReply, WorkerInstruction } from "../core/worker-core-instructions";
import { CoreDriver } from "../../common/core/core-driver";
import type { TaskInfo, TaskOutput, TaskRunner } from "./task-runner";
import type { CallTimes } from "./task-call-times";

/** How long CancelTask waits for the task's table commits in flight before it answers anyway (a silent store). */
export const CANCEL_SETTLE_WAIT_MS = 3_000;

/**
 * RunClaims: how a task that writes tables gets its run (run-fencing.ts over the table store): its
 * plan aligned with the scopes its block tables hold, and the run claimed cluster-wide. `prepare`
 * throws a WorkerError (the task runs elsewhere, the store is unreachable); `end` records a run's end.
 */
export interface RunClaims {
  prepare(plan: TaskPlan, resubmit: boolean): Promise<{ plan: TaskPlan; fence: RunFence }>;
  /** end records the run's end; it resolves once recorded or given up (never rejects). */
  end(fence: RunFence, state: TaskState): Promise<void>;
}

/**
 * END_RECORD_WAIT_MS bounds how long a terminal snapshot waits for its run's end to be recorded in
 * the store: a watcher that hears SUCCEEDED then finds the id ended there (a plain resubmission is
 * refused as done, not as running), and a store that cannot be reached delays the news only this long.
 */
export const END_RECORD_WAIT_MS = 2_000;

/** withinMs resolves when `p` settles or after `ms`, whichever comes first. */
function withinMs(p: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/**
 * WorkerDriver runs WorkerCore: it feeds the core one event at a time (client requests, the task
 * runner's reports, the timer), carries out the instructions (start, stop and forget tasks in the
 * TaskRunner, publish snapshots, report drained) and arms one timer at the core's next deadline.
 * Events the runner reports while instructions are being carried out are queued and applied
 * after, because the core is not re-entrant. Everything is timed by one injected clock.
 */
export class WorkerDriver {
  /** Runs the core: queues the runner's reports, one timer at the core's next deadline. */
  private readonly driver: CoreDriver<WorkerEvent, WorkerInstruction>;
  private drainedWaiters: (() => void)[] = [];
  private drained = false;
  /** Tasks already counted in onTaskEnded (a terminal snapshot may be published again). */
  private readonly ended = new Set<string>();
  /** The record of a run's end in the store, per task id, while it is being written. */
  private readonly endRecords = new Map<string, Promise<void>>();
  /** Every snapshot the core publishes (WatchTasks streams subscribe here). */
  onSnapshot: (snapshot: TaskSnapshot) => void = () => {};
  /** New log lines of a task (StreamTaskLogs followers). */
  onLogLines: (taskId: string, lines: readonly TaskLogEntry[]) => void = () => {};
  /** Called once per task that reaches a terminal state (metrics). */
  onTaskEnded: (state: TaskState, snapshot: TaskSnapshot) => void = () => {};
  /** A task's calls timed in the executor pool (TaskCallTimes), for listTasks; none by default. */
  callTimesOf: (taskId: string) => CallTimes | undefined = () => undefined;

  constructor(
    private readonly core: WorkerCore,
    private readonly runner: TaskRunner,
    /** Validates a SubmitTask's task into a plan (planTask with the profile and the function snapshot); throws WorkerError. */
    private readonly plan: (task: Task | undefined) => TaskPlan,
    private readonly log: Logger,
    nowMs: NowMs,
    /** Claims the runs of tasks writing tables (null: no table store, nothing is fenced: unit tests). */
    private readonly claims: RunClaims | null = null,
  ) {
    this.driver = new CoreDriver(core, { name: "worker", carryOut: (i) => this.carryOut(i), nowMs, timeAdvanced: { type: "timeAdvanced" }, log });
    runner.onEvent = (e) => this.driver.post(e);
    runner.onLogLines = (taskId, lines) => this.onLogLines(taskId, lines);
  }

  /** Called for each ended task forgotten before its retention, over the retained bounds (a metric counts them). */
  onRetainedEvicted: () => void = () => {};

  requestTaskSlot(taskId: string, ttlMs: number, requester: Requester): SnapshotReply {
    return this.send({ type: "taskSlotRequested", taskId, ttlMs, requester });
  }

  /**
   * submitTask plans the task (a bad task throws WorkerError before the core hears of it), claims
   * its run when it writes tables and the core would start it (RunClaims: a task id whose run is
   * current elsewhere is refused here, TASK_RUN_ELSEWHERE), lets the core decide, hands the reply to
   * `respond` and only then starts the task, so the client hears RUNNING before the task's first
   * calls are dispatched. This is the one per-task doorway of a submission (a batch submits task by
   * task through it): the core refuses a task or slot of another identity than `requester`
   * (PERMISSION_DENIED) before anything starts. `owner` is the label ListTasks shows; `resubmit`:
   * the client gave up on the task's earlier runs (SubmitTaskRequest.resubmit).
   */
  async submitTask(task: Task | undefined, slotId: string, owner: string, requester: Requester, respond: (reply: SnapshotReply) => void, resubmit = false): Promise<void> {
    let plan = this.plan(task);
    let fence: RunFence | null = null;
    if (this.claims && writesTables(plan) && !this.runner.knows(plan.taskId)) {
      this.advance(); // due expiries first: a slot that just expired must not be claimed for
      if (this.core.wouldStart(plan.taskId, slotId, requester)) ({ plan, fence } = await this.claims.prepare(plan, resubmit));
    }
    // Kept before the core decides, so that startTask finds it; dropped again if nothing starts.
    const fresh = this.runner.accept(plan, owner, requester.identity, fence, requester.admin);
    const decision = this.driver.decide<SnapshotReply>({ type: "taskSubmitted", task: { taskId: plan.taskId, timeoutMs: plan.timeoutMs }, slotId, requester });
    if (fresh && !decision.instructions.some((i) => i.type === "startTask")) {
      this.runner.forget(plan.taskId);
      // Claimed, then not started (the slot went while the claim was made): give the id back.
      if (fence) this.claims!.end(fence, TaskState.CANCELLED);
    }
    respond(decision.reply!);
    this.driver.apply(decision);
  }

  /**
   * cancelTask stops the task and resolves with the core's reply once none of its table commits is
   * in flight: a commit sent before the cancel cannot be recalled, and no row may land after the
   * client heard CANCELLED. A commit the table store does not answer (a connection gone silent) is
   * waited for CANCEL_SETTLE_WAIT_MS at most: the cancel is answered within its deadline anyway,
   * and that commit, the run's last, ends at its own deadline (TABLE_STORE_STATEMENT_TIMEOUT_MS +
   * margin), rolled back unless the store had already received its COMMIT. Watchers hear the task's
   * end only once it settled.
   */
  async cancelTask(taskId: string, reason: string, requester: Requester): Promise<SnapshotReply> {
    const reply = this.send({ type: "taskCancelRequested", taskId, reason, requester });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const settled = await Promise.race([
      this.runner.writesSettled(taskId).then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), CANCEL_SETTLE_WAIT_MS))),
    ]);
    clearTimeout(timer);
    if (!settled) this.log.warn({ taskId, waitedMs: CANCEL_SETTLE_WAIT_MS }, "cancel answered while a table commit of the task is still unanswered by the store (it ends at its own deadline)");
    return reply;
  }

  /** queryTask: the task's snapshot as of now (every due expiry applied first); PERMISSION_DENIED for another identity's task. */
  queryTask(taskId: string, requester: Requester): SnapshotReply {
    return this.send({ type: "taskQueried", taskId, requester });
  }

  /** result: the task's snapshot and, once it ended, its output (values, first error, writes). */
  result(taskId: string, requester: Requester): SnapshotReply & { output?: TaskOutput } {
    const reply = this.queryTask(taskId, requester);
    if (reply.err) return reply;
    const output = this.runner.result(taskId);
    return output ? { ...reply, output } : reply;
  }

  /** readLogs: a task's kept log lines (see TaskRunner.readLogs). */
  readLogs(taskId: string, o: { afterSeq?: number; tail?: number }): ReturnType<TaskRunner["readLogs"]> {
    return this.runner.readLogs(taskId, o);
  }

  /**
   * listTasks: every task of `requester` this Worker knows as of now (an admin: every task), newest
   * first, with what the runner knows of it.
   */
  listTasks(limit: number, requester: Requester): { tasks: { snapshot: TaskSnapshot; info: TaskInfo | undefined; times: CallTimes | undefined }[]; truncated: boolean } {
    this.advance();
    const all = this.core
      .snapshots()
      .filter((s) => requester.admin || this.core.ownerOf(s.taskId) === requester.identity).sort((a, b) => b.allocatedAtMs - a.allocatedAtMs || b.acceptedAtMs - a.acceptedAtMs || (a.taskId < b.taskId ? -1 : 1));
    return {
      tasks: all.slice(0, limit).map((snapshot) => ({ snapshot: this.withRun(snapshot), info: this.runner.info(snapshot.taskId), times: this.callTimesOf(snapshot.taskId) })),
      truncated: all.length > limit,
    };
  }

  /**
   * story: the task's history as the core kept it (oldest first; [] for a task it does not know),
   * as of now: due expiries are applied first, so a task past its retention is not found here
   * while GetTaskResult already says NOT_FOUND (locate probes with this).
   */
  story(taskId: string): ReturnType<WorkerCore["story"]> {
    this.advance();
    return this.core.story(taskId);
  }

  /** drain stops taking slots; resolves when no task holds a slot any more. */
  drain(): Promise<void> {
    this.driver.send({ type: "drainingStarted" });
    return this.drained ? Promise.resolve() : new Promise((r) => this.drainedWaiters.push(r));
  }

  /** stop disarms the timer (shutdown): nothing is applied any more. */
  stop(): void {
    this.driver.stop();
  }

  /** send: a client's request through the core; its reply carries the task's run. */
  private send(event: WorkerEvent): SnapshotReply {
    return this.withRunOf(this.driver.send<SnapshotReply>(event)!);
  }

  /**
   * withRun: the snapshot with the generation of the task's run here (a task writing tables), so a
   * client that asked for a newer run can tell an older run's end from its own. The core knows no runs.
   */
  private withRun(snapshot: TaskSnapshot): TaskSnapshot {
    const fence = this.runner.fenceOf(snapshot.taskId);
    return fence ? { ...snapshot, runGeneration: fence.generation } : snapshot;
  }

  private withRunOf(reply: SnapshotReply): SnapshotReply {
    return reply.snapshot ? { ...reply, snapshot: this.withRun(reply.snapshot) } : reply;
  }

  private carryOut(ins: WorkerInstruction): void {
    switch (ins.type) {
      case "publishSnapshot":
        if (TERMINAL_TASK_STATES.has(ins.snapshot.state) && !this.ended.has(ins.snapshot.taskId)) {
          this.ended.add(ins.snapshot.taskId);
          this.onTaskEnded(ins.snapshot.state, ins.snapshot);
          this.endRun(ins.snapshot);
          // What it keeps until forgotten counts against the Worker's retained bounds (the core evicts the oldest).
          this.driver.post({ type: "taskRetainedSizeKnown", taskId: ins.snapshot.taskId, bytes: this.runner.retainedBytes(ins.snapshot.taskId) });
        }
        this.publish(ins.snapshot);
        break;
      case "startTask":
        this.log.debug({ taskId: ins.taskId, slotId: ins.slotId, deadlineMs: ins.deadlineMs }, "task started");
        this.runner.start(ins.taskId);
        break;
      case "stopTask":
        this.log.info({ taskId: ins.taskId, slotId: ins.slotId, reason: ins.reason }, ins.message);
        this.runner.stop(ins.taskId);
        break;
      case "forgetTask":
        if (ins.reason === "RETENTION_EVICTED") {
          this.onRetainedEvicted();
          this.log.debug({ taskId: ins.taskId }, "ended task forgotten before its retention: over the Worker's retained bounds (WORKER_RETAINED_TASKS_MAX, WORKER_RETAINED_BYTES_MAX)");
        }
        this.ended.delete(ins.taskId);
        this.runner.forget(ins.taskId);
        break;
      case "reportDrained":
        this.drained = true;
        for (const w of this.drainedWaiters.splice(0)) w();
        break;
    }
  }

  /**
   * endRun records a table task's end in the store once its last commit settled (cancelled, timed
   * out or failed while one was in flight: that commit was still the run's). A later claim of the
   * id may then take it over, unless it SUCCEEDED.
   */
  private endRun(snapshot: TaskSnapshot): void {
    const fence = this.runner.fenceOf(snapshot.taskId);
    if (!fence || !this.claims) return;
    const claims = this.claims;
    const recorded = this.runner.writesSettled(snapshot.taskId).then(() => claims.end(fence, snapshot.state));
    this.endRecords.set(snapshot.taskId, recorded);
    void recorded.finally(() => {
      if (this.endRecords.get(snapshot.taskId) === recorded) this.endRecords.delete(snapshot.taskId);
    });
  }

  /**
   * publish hands a snapshot to the watchers; a terminal one waits until the task's table commits
   * in flight have settled (a task cancelled, timed out or failed while another call's rows were
   * being committed), so that a watcher that hears the end finds every row the task will write.
   */
  private publish(raw: TaskSnapshot): void {
    const snapshot = this.withRun(raw);
    const recording = this.endRecords.get(snapshot.taskId);
    if (!TERMINAL_TASK_STATES.has(snapshot.state) || (!this.runner.hasPendingWrites(snapshot.taskId) && !recording)) return this.onSnapshot(snapshot);
    // Commits in flight are waited for whole (the rows a watcher finds); the end's record at most END_RECORD_WAIT_MS after them.
    void this.runner
      .writesSettled(snapshot.taskId)
      .then(() => (recording ? withinMs(recording, END_RECORD_WAIT_MS) : undefined))
      .then(() => this.onSnapshot(snapshot));
  }

  /** advance applies what is due as of now (expiries, deadlines): the timer, and reads that must not see the past. */
  private advance(): void {
    this.driver.advance();
  }
}
