import type { TableWriter } from "./table-owner";

/**
 * Fencing: which run of a task may write rows. The rules live here, pure; both table stores read
 * the rows these functions need and carry out what they decide, in one transaction each.
 *
 * - A Worker incarnation (an *epoch*: a random id per process start, and a new one after losing
 *   it) holds a lease in the table store, renewed while it lives and reaches the store. An expired
 *   lease is never renewed: a Worker paused or cut off from the store past its lease comes back
 *   with every run it held ended.
 * - A task id has at most one *current run* cluster-wide: (generation, epoch) in the store's run
 *   table. A Worker claims a run before it starts the task; a second claim of the same id while
 *   the run is current (RUNNING under a live lease), or after it SUCCEEDED, is refused naming the
 *   Worker that holds it, unless the client gave up on that run and asks to supersede it (a
 *   resubmission): then the generation goes up and the old run is fenced off.
 * - Every commit carries its run's fence and is refused in its own transaction unless that run is
 *   still current: same generation and epoch, RUNNING, the epoch's lease live (the store's clock).
 * - Every claim gets a *sequence number* from the store, increasing: rows of a block table
 *   remember the sequence of the run that wrote them, and a write never replaces rows written by a
 *   run claimed after its own (the later submission wins, whatever the order the commits arrive in).
 */

/** RunFence: the run a commit belongs to, given back by a claim. */
export interface RunFence {
  readonly taskId: string;
  readonly generation: number;
  /** The Worker incarnation that holds the run. */
  readonly epoch: string;
  /** The claim's place in the store's order of claims. */
  readonly seq: number;
}

/**
 * CallFence: one call's commit: its run, the call's index (normal tables replace a call's earlier
 * rows by it), and who writes it (table-owner.ts; absent or null: no identity, not checked).
 */
export interface CallFence extends RunFence {
  readonly callIndex: number;
  readonly writer?: TableWriter | null;
}

export type RunState = "RUNNING" | "SUCCEEDED" | "FAILED" | "CANCELLED" | "TIMED_OUT";
export const RUN_STATES: readonly RunState[] = ["RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"];

/** RunRow: a task's current run as the store keeps it, with whether its epoch's lease is live now. */
export interface RunRow {
  readonly taskId: string;
  readonly generation: number;
  readonly epoch: string;
  /** Where that Worker answers (for the refusal's message and the client that attaches). */
  readonly workerAddr: string;
  readonly state: RunState;
  readonly seq: number;
  readonly leaseLive: boolean;
}

/** RunClaimRequest: a Worker asks to run a task. */
export interface RunClaimRequest {
  readonly taskId: string;
  readonly epoch: string;
  readonly workerAddr: string;
  /** The client gave up on any earlier run of this id (a resubmission): take it over. */
  readonly supersede: boolean;
}

/**
 * RunClaim: the claim's answer. `claimed`: run with this fence. `refused`: another run is current
 * or the task already succeeded; `current` says where. `leaseLost`: this Worker's own lease has
 * expired; it must take a new epoch before it claims anything.
 */
export type RunClaim =
  | { readonly kind: "claimed"; readonly fence: RunFence; readonly tookOver: RunRow | null }
  | { readonly kind: "refused"; readonly current: RunRow }
  | { readonly kind: "leaseLost" };

/** ClaimDecision: what the store writes for a claim. */
export type ClaimDecision =
  | { readonly kind: "insert" }
  | { readonly kind: "takeOver"; readonly generation: number }
  | { readonly kind: "mine"; readonly fence: RunFence }
  | { readonly kind: "refuse" }
  | { readonly kind: "leaseLost" };

/**
 * decideClaim: a claim for `req` given the task's run row (null: never run) and whether the
 * claiming epoch's own lease is live. The claiming Worker's own current run is given back
 * (idempotent); a superseding claim always takes over; a run that is not current any more (its
 * lease expired, or it ended other than SUCCEEDED) is taken over without asking; a current run
 * elsewhere, or one that SUCCEEDED, refuses.
 */
export function decideClaim(req: RunClaimRequest, row: RunRow | null, ownLeaseLive: boolean): ClaimDecision {
  if (!ownLeaseLive) return { kind: "leaseLost" };
  if (row === null) return { kind: "insert" };
  const current = row.state === "RUNNING" && row.leaseLive;
  if (current && row.epoch === req.epoch) return { kind: "mine", fence: { taskId: row.taskId, generation: row.generation, epoch: row.epoch, seq: row.seq } };
  if (req.supersede) return { kind: "takeOver", generation: row.generation + 1 };
  if (current || row.state === "SUCCEEDED") return { kind: "refuse" };
  return { kind: "takeOver", generation: row.generation + 1 };
}

/**
 * fenceProblem: why a commit under `fence` must be refused, given the task's run row now (null:
 * no run at all), or null when the run is current. Messages say what a user reads on the task.
 */
export function fenceProblem(fence: RunFence, row: RunRow | null): string | null {
  if (row === null) return `task ${fence.taskId} has no run in the table store: this run's claim is gone`;
  if (row.generation !== fence.generation || row.epoch !== fence.epoch) {
    return `task ${fence.taskId} was resubmitted (run ${row.generation} on ${row.workerAddr || "another Worker"} replaced run ${fence.generation} on this one): this run's rows are refused`;
  }
  if (row.state !== "RUNNING") return `task ${fence.taskId}'s run ${fence.generation} already ended (${row.state}): nothing more of it is written`;
  if (!row.leaseLive) return `this Worker's lease in the table store expired (paused or cut off from the store for longer than its lease): run ${fence.generation} of task ${fence.taskId} is no longer current and its rows are refused`;
  return null;
}

/** newerRowsProblem: a block-table write of run `seq` would replace rows a later-claimed run wrote. */
export function newerRowsProblem(table: string, fence: RunFence, newest: { seq: number; from: number; to: number }): string {
  return (
    `blocks ${newest.from}..${newest.to} of table ${table} were written by a run submitted after this one (run ${fence.generation} of task ${fence.taskId}): ` +
    "its rows there are refused, the later task's stay"
  );
}

/** cutScopeProblem: a block-table write would remove rows of blocks it does not recompute. */
export function cutScopeProblem(table: string, scope: { fromBlock: number; toBlock: number }, cut: { from: number; to: number }): string {
  return (
    `writing blocks ${scope.fromBlock}..${scope.toBlock} of table ${table} would remove the rows of earlier scope ${cut.from}..${cut.to} ` +
    `(rows carry no block of their own), leaving blocks outside ${scope.fromBlock}..${scope.toBlock} without rows: rerun a range whose bundles cover ${cut.from}..${cut.to} whole`
  );
}
