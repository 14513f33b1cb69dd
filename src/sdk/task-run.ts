/**
 * task-run: what one run of a task is to the SDK, shared by the single path (BlockxClient) and
 * the batch path (BatchRunner): the options and results, the events on the way, and how a gRPC
 * failure or a snapshot is read. BatchRunner asks the client for single runs through TaskRuns, so
 * neither file imports the other's module for these.
 */
import * as grpc from "@grpc/grpc-js";
import { parseExactJson } from "../common/json/exact-json";
import { UnaryCallError } from "../common/grpc/http2-unary-channel";
import { TERMINAL_TASK_STATES } from "../common/terminal-task-states";
import { type Task, TaskResult, type TaskSnapshot, TaskState, taskStateToJSON } from "../gen/worker/v1/worker";
import { isServiceError, type WorkerCalls } from "./adapters/grpc-transport";
import type { ClientConfig } from "./client-config";
import type { Cluster } from "./core/cluster-selection";
import type { Progress } from "./core/progress";
import type { RetryableFailure } from "./core/retry-policy";
import { BlockxError, type BlockxErrorCode } from "./sdk-error";

/** TaskRef names a task on the Worker that holds it. */
export interface TaskRef {
  readonly taskId: string;
  readonly workerAddr: string;
  /**
   * The SubmitTask that named this Worker failed after it may have reached it: the task may be
   * running there, or may never have arrived. Following it tells which; a Worker that does not know
   * the task is then not a lost Worker but a submission that did not land (submitted again plainly).
   */
  readonly uncertain?: boolean;
}

/** TaskHandle: a submitted task, returned by `submit` before it finishes. */
export interface TaskHandle extends TaskRef {
  readonly slotId: string;
  readonly cluster: Cluster;
  /** The Coordinator that reserved the slot (or `proxy:<socket>`). */
  readonly coordinator: string;
  readonly snapshot: TaskSnapshot;
}

/** ClientEvent: what the SDK did on the way, for logs, progress displays and tests. */
export type ClientEvent =
  | { readonly kind: "reserveRefused"; readonly failure: RetryableFailure; readonly coordinator: string; readonly details: string; readonly delayMs: number }
  | { readonly kind: "submitRefused"; readonly code: string; readonly workerAddr: string; readonly details: string }
  /** runTask's SubmitTask is being sent to `workerAddr` (it may wait up to 1 s for the task's end before `submitted`). */
  | { readonly kind: "submitting"; readonly attempt: number; readonly taskId: string; readonly workerAddr: string; readonly slotId: string; readonly coordinator: string }
  /** `state`: what SubmitTask answered (a terminal state when the Worker answered at the task's end). */
  | { readonly kind: "submitted"; readonly attempt: number; readonly taskId: string; readonly workerAddr: string; readonly slotId: string; readonly coordinator: string; readonly state: TaskStateName }
  /** A SubmitTask failed after it may have reached the Worker: the task is followed there first, not submitted elsewhere. */
  | { readonly kind: "submitUncertain"; readonly attempt: number; readonly taskId: string; readonly workerAddr: string; readonly code: string; readonly details: string }
  /** The Worker refused the task because its run is current (or SUCCEEDED) on `runningOn`: followed there instead of run twice. */
  | { readonly kind: "attached"; readonly attempt: number; readonly taskId: string; readonly refusedBy: string; readonly runningOn: string; readonly state: string }
  /** An uncertain SubmitTask had not landed (its Worker does not know the task): submitted again, plainly. */
  | { readonly kind: "submitNotLanded"; readonly attempt: number; readonly taskId: string; readonly workerAddr: string }
  | { readonly kind: "watchFailed"; readonly workerAddr: string; readonly code: string; readonly details: string }
  | { readonly kind: "workerLost"; readonly attempt: number; readonly workerAddr: string; readonly reason: string; readonly resubmit: boolean };

export type TaskStateName = "ALLOCATED" | "RUNNING" | "SUCCEEDED" | "FAILED" | "TIMED_OUT" | "CANCELLED" | "TASK_STATE_UNSPECIFIED";

export interface RunTaskOptions {
  /** Overrides the cluster chosen from the task (see clusterFor). */
  readonly cluster?: Cluster;
  /** Absolute wall-clock deadline (ms since epoch) for the whole run, retries included. */
  readonly deadlineMs?: number;
  /** Relative alternative to deadlineMs; default the task's timeout (or 300000) + 60000. */
  readonly timeoutMs?: number;
  /** Rerun the task when its Worker is lost (a new run that fences the lost one off); default true. */
  readonly resubmit?: boolean;
  /** Runs at most (default BLOCKX_MAX_ATTEMPTS). */
  readonly maxAttempts?: number;
  readonly onProgress?: (progress: Progress, snapshot: TaskSnapshot) => void;
  readonly onEvent?: (event: ClientEvent) => void;
}

/** RunResult: a task that reached a terminal state, and how it got there. */
export interface RunResult {
  readonly taskId: string;
  readonly cluster: Cluster;
  readonly state: TaskStateName;
  readonly succeeded: boolean;
  readonly result: TaskResult;
  /** The JSON values of a return_value task, by call index. */
  readonly returnValues: unknown[];
  /** Runs of the task: 1 + resubmissions after a lost Worker. */
  readonly attempts: number;
  /** The Worker of each run, in order. */
  readonly workers: string[];
  readonly events: ClientEvent[];
}

/** Where runFrom picks a task up (all optional: a fresh run). */
export interface RunStart {
  readonly handle?: TaskRef;
  /** The attempt `handle` is (default 1). */
  readonly attempt?: number;
  readonly deadlineMs?: number;
  /** Events and Workers of the run so far; runFrom appends to them. */
  readonly events?: ClientEvent[];
  readonly workers?: string[];
}

export interface RunTasksOptions extends RunTaskOptions {
  /** Tasks in flight at most (default 4). */
  readonly concurrency?: number;
  /** Tasks per ReserveWorkerSlots / SubmitTasks (default 256, at most 1024). */
  readonly batchSize?: number;
  readonly onSettled?: (entry: RunTasksEntry) => void;
}

export type RunTasksEntry = { readonly task: Task; readonly ok: true; readonly run: RunResult } | { readonly task: Task; readonly ok: false; readonly error: BlockxError };

export interface ClientClock {
  now(): number;
  random(): number;
  sleep(ms: number): Promise<void>;
}

/** neverSent: the call's request reached no server, as the lean channel knows it (any other error counts as sent). */
function neverSent(e: grpc.ServiceError): boolean {
  return e instanceof UnaryCallError && e.neverSent;
}

/**
 * submitMayHaveLanded: a SubmitTask (or SubmitTasks) failed in a way that says nothing of whether
 * the Worker took it: the connection dropped or the deadline passed after the request went out.
 * Such a task is followed on that Worker, never submitted elsewhere as if new. @internal
 */
export function submitMayHaveLanded(e: grpc.ServiceError): boolean {
  return (e.code === grpc.status.UNAVAILABLE || e.code === grpc.status.DEADLINE_EXCEEDED || e.code === grpc.status.CANCELLED || e.code === grpc.status.UNKNOWN || e.code === grpc.status.INTERNAL) && !neverSent(e);
}

/**
 * resultOf: the TaskResult a terminal snapshot of a `with_results` watch carries, as GetTaskResult
 * would answer it; undefined for any other snapshot (a Worker that predates with_results sends none).
 * @internal
 */
export function resultOf(s: TaskSnapshot): TaskResult | undefined {
  if (!s.outputs || !TERMINAL_TASK_STATES.has(s.state)) return undefined;
  const { outputs, ...snapshot } = s;
  return TaskResult.create({ snapshot: { ...snapshot, outputs: undefined }, ...outputs });
}

/** finishedRun: the RunResult of a task that reached a terminal state. */
export function finishedRun(task: Task, cluster: Cluster, result: TaskResult, attempts: number, workers: string[], events: ClientEvent[]): RunResult {
  const state = stateName(result.snapshot?.state);
  return {
    taskId: task.taskId,
    cluster,
    state,
    succeeded: state === "SUCCEEDED",
    result,
    returnValues: result.returnValues.map((b) => parseExactJson(b.toString("utf8")) as unknown),
    attempts,
    workers,
    events,
  };
}

export function validateTask(task: Task): void {
  if (!task.taskId) throw new BlockxError("INVALID_ARGUMENT", "the task has no task_id");
  if (!task.functionCallConfig?.config) throw new BlockxError("INVALID_ARGUMENT", `task ${task.taskId}: no call config (block_table, block_bundle or inputs)`);
  if (task.outputs.length === 0) throw new BlockxError("INVALID_ARGUMENT", `task ${task.taskId}: no output (a table or return_value)`);
}

/** retryableFailure classifies a gRPC error; a call that timed out counts as Unavailable. */
export function retryableFailure(e: unknown): RetryableFailure | undefined {
  if (!isServiceError(e)) return undefined;
  switch (e.code) {
    case grpc.status.UNAVAILABLE:
    case grpc.status.DEADLINE_EXCEEDED:
      return "UNAVAILABLE";
    case grpc.status.RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc.status.ABORTED:
      return "ABORTED";
    default:
      return undefined;
  }
}

/** detailsOf: a gRPC error's details, or the error as text. */
export function detailsOf(e: unknown): string {
  return isServiceError(e) ? e.details : String(e);
}

const CODE_BY_STATUS: Partial<Record<grpc.status, BlockxErrorCode>> = {
  [grpc.status.INVALID_ARGUMENT]: "INVALID_ARGUMENT",
  [grpc.status.UNAVAILABLE]: "UNREACHABLE",
  [grpc.status.DEADLINE_EXCEEDED]: "UNREACHABLE",
  [grpc.status.NOT_FOUND]: "NOT_FOUND",
  [grpc.status.UNIMPLEMENTED]: "UNSUPPORTED",
  [grpc.status.RESOURCE_EXHAUSTED]: "NO_CAPACITY",
};

/** toBlockxError: the one place a gRPC failure becomes an SDK error code. */
export function toBlockxError(e: unknown, what: string): BlockxError {
  if (e instanceof BlockxError) return e;
  if (!isServiceError(e)) return new BlockxError("RPC_FAILED", `${what}: ${String(e)}`);
  return statusError(e.code, e.details, what);
}

/** statusError: a gRPC status a batch answered for one task, as the SDK error a single call would have thrown. */
export function statusError(code: grpc.status, details: string, what: string): BlockxError {
  return new BlockxError(CODE_BY_STATUS[code] ?? "RPC_FAILED", `${what}: ${grpc.status[code]}: ${details}`, code);
}

export function stateName(state: TaskState | undefined): TaskStateName {
  return taskStateToJSON(state ?? TaskState.TASK_STATE_UNSPECIFIED) as TaskStateName;
}

export function isTerminal(state: TaskState): boolean {
  return TERMINAL_TASK_STATES.has(state);
}

/**
 * TaskRuns: what the batch path asks of the client (BlockxClient): a task's deadline, a single
 * run picked up where the batch left it, the clusters' Coordinators, and a Worker's watch stream.
 */
export interface TaskRuns {
  readonly config: Pick<ClientConfig, "coordinatorAddrs" | "bundleCoordinatorAddrs">;
  deadlineOf(task: Task, opts: Pick<RunTaskOptions, "deadlineMs" | "timeoutMs">): number;
  runFrom(task: Task, opts: RunTaskOptions, start: RunStart): Promise<RunResult>;
  stream(
    w: WorkerCalls,
    taskIds: readonly string[],
    deadlineMs: number,
    onSnapshot: (s: TaskSnapshot) => void,
    o?: { terminalOnly?: boolean },
  ): Promise<{ err?: grpc.ServiceError; silentSinceMs?: number }>;
}
