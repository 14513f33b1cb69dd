import { BoundedLabel, LATENCY_BUCKETS_SECONDS, TASK_DURATION_BUCKETS_SECONDS, type MetricsRegistry } from "../../common/metrics/metrics";
import { TaskState, type TaskSnapshot } from "../../gen/worker/v1/worker";
import { CallErrorCode } from "../../runtime/calls/call";
import type { ExecutorPoolStats } from "../../runtime/executor/executor-pool";
import type { CallFinishedInfo } from "./task-runner";
import type { CommitCounts } from "../../outputs/stores/table-store";

/** At most this many table names become label values of blockx_worker_rows_written_total; later ones count as `_other`. */
export const MAX_TABLE_LABELS = 50;

/** Call durations reach minutes (a call's budget), so the latency buckets are extended up to 5 min. */
const CALL_BUCKETS_SECONDS = [...LATENCY_BUCKETS_SECONDS, 30, 60, 300];

/** The executor deaths a call outcome reveals, by the reason label they are counted under. */
const EXECUTOR_FAILURES: Partial<Record<string, string>> = {
  [CallErrorCode.ExecutorCrashed]: "crashed",
  [CallErrorCode.OomKilled]: "oom_killed",
  [CallErrorCode.ExecutorHung]: "hung",
};

export interface WorkerMetricsSources {
  readonly slotCounts: () => { taskSlots: number; freeSlots: number; reservedSlots: number; runningTasks: number };
  readonly inflightCalls: () => number;
  readonly poolStats: () => ExecutorPoolStats;
  /** The tables a task wrote (its output), once it ended. */
  readonly writesOf: (taskId: string) => readonly { table: string; rowsWritten: number }[];
  /** The table store's commits so far and the transactions they went in. */
  readonly commitCounts: () => CommitCounts;
}

export interface WorkerMetrics {
  taskEnded(state: TaskState, snapshot: TaskSnapshot): void;
  /** An ended task was forgotten before its retention: the Worker's retained bounds were reached. */
  retainedEvicted(): void;
  callFinished(systemFailure: boolean, info: CallFinishedInfo): void;
}

/**
 * registerWorkerMetrics exposes what a Worker does: tasks and calls by outcome with their
 * durations, calls in flight, slot occupancy, rows written per table (bounded label), and the
 * executor pool (restarts, deaths by reason, queue). Label values come from closed sets (task
 * states, call error codes) or are bounded (tables); never a task id.
 */
export function registerWorkerMetrics(registry: MetricsRegistry, src: WorkerMetricsSources): WorkerMetrics {
  const tasksEnded = registry.counter("blockx_worker_tasks_total", "Tasks that reached a terminal state, by state.", ["state"]);
  const taskSeconds = registry.histogram(
    "blockx_worker_task_duration_seconds",
    "Time from a task's acceptance to its terminal state, by state.",
    ["state"],
    TASK_DURATION_BUCKETS_SECONDS,
  );
  const callsFinished = registry.counter("blockx_worker_calls_total", "Calls finished, by whether they failed for a system reason.", ["result"]);
  const callSeconds = registry.histogram(
    "blockx_worker_call_duration_seconds",
    "Time a call (or sub-call) took from dispatch to its outcome, by outcome (OK or the call error code).",
    ["outcome"],
    CALL_BUCKETS_SECONDS,
  );
  const evicted = registry.counter(
    "blockx_worker_retained_evicted_total",
    "Ended tasks forgotten before RESULT_RETENTION_MS because the ended tasks kept more than WORKER_RETAINED_TASKS_MAX or WORKER_RETAINED_BYTES_MAX (oldest first).",
  );
  const inflight = registry.gauge("blockx_worker_calls_in_flight", "Calls and sub-calls of running tasks dispatched and not finished.");
  inflight.onCollect(() => inflight.set({}, src.inflightCalls()));
  const slots = registry.gauge("blockx_worker_slots", "Task slots by state.", ["state"]);
  const occupancy = registry.gauge("blockx_worker_slot_occupancy_ratio", "Share of task slots reserved or running (0..1).");
  slots.onCollect(() => {
    const c = src.slotCounts();
    slots.set({ state: "free" }, c.freeSlots);
    slots.set({ state: "allocated" }, c.reservedSlots);
    slots.set({ state: "running" }, c.runningTasks);
    occupancy.set({}, c.taskSlots > 0 ? (c.taskSlots - c.freeSlots) / c.taskSlots : 0);
  });
  const commits = registry.counter("blockx_table_store_commits_total", "Calls' rows committed to the table store (one commit per call that wrote).");
  const transactions = registry.counter(
    "blockx_table_store_transactions_total",
    "Transactions those commits went in: calls finishing while a commit is being written share the next one (group commit), so commits / transactions is the calls per fsync.",
  );
  commits.onCollect(() => {
    const c = src.commitCounts();
    commits.setTotal({}, c.commits);
    transactions.setTotal({}, c.transactions);
  });
  const tables = new BoundedLabel(MAX_TABLE_LABELS);
  const rows = registry.counter("blockx_worker_rows_written_total", `Rows written by ended tasks, by table (the first ${MAX_TABLE_LABELS} table names; later ones as _other).`, ["table"]);
  const restarts = registry.counter("blockx_executor_restarts_total", "Python executors restarted after dying.");
  const deaths = registry.counter("blockx_executor_failures_total", "Calls lost to an executor's death, by reason (crashed, oom_killed, hung).", ["reason"]);
  const executors = registry.gauge("blockx_executors", "Python executors by state.", ["state"]);
  const queued = registry.gauge("blockx_executor_queued_calls", "Calls waiting for a free executor.");
  const handoffs = registry.counter(
    "blockx_executor_block_handoffs_total",
    "Final blocks of the block store sent to executors, by how: mapped (offset and length into the store file the executor inherited) or bytes (in the frame).",
    ["via"],
  );
  const prefetched = registry.counter(
    "blockx_executor_prefetched_answers_total",
    "Calls that ended with the answer to their expected first IO request in their ExecuteCall (TASK_IO_PREFETCH), by whether the function took it (taken) or asked something else first (not_taken).",
    ["outcome"],
  );
  restarts.onCollect(() => {
    const s = src.poolStats();
    restarts.setTotal({}, s.restarts);
    for (const [via, n] of Object.entries(s.blockHandoffs)) handoffs.setTotal({ via }, n);
    prefetched.setTotal({ outcome: "taken" }, s.prefetchedAnswers.taken);
    prefetched.setTotal({ outcome: "not_taken" }, s.prefetchedAnswers.notTaken);
    queued.set({}, s.queued);
    const byState = new Map<string, number>();
    for (const e of s.executors) byState.set(e.state, (byState.get(e.state) ?? 0) + 1);
    for (const k of executors.labelValues("state")) if (!byState.has(k)) byState.set(k, 0);
    for (const [state, n] of byState) executors.set({ state }, n);
  });
  for (const reason of Object.values(EXECUTOR_FAILURES)) deaths.inc({ reason: reason! }, 0);
  return {
    retainedEvicted() {
      evicted.inc({});
    },
    taskEnded(state, snapshot) {
      const name = TaskState[state] ?? String(state);
      tasksEnded.inc({ state: name });
      if (snapshot.acceptedAtMs > 0 && snapshot.finishedAtMs >= snapshot.acceptedAtMs) {
        taskSeconds.observe({ state: name }, (snapshot.finishedAtMs - snapshot.acceptedAtMs) / 1000);
      }
      for (const w of src.writesOf(snapshot.taskId)) rows.inc({ table: tables.value(w.table) }, w.rowsWritten);
    },
    callFinished(systemFailure, info) {
      callsFinished.inc({ result: systemFailure ? "system_failure" : "finished" });
      callSeconds.observe({ outcome: info.outcome }, info.seconds);
      const reason = EXECUTOR_FAILURES[info.outcome];
      if (reason) deaths.inc({ reason });
    },
  };
}
