import type { ClientEvent } from "../../src/sdk/blockx-client";
import { TaskState, type TaskSnapshot } from "../../src/gen/worker/v1/worker";

/** Which of the client's paths an event came from: runTask's single SubmitTask, or runTasks' batches. */
export type SubmitPath = "single" | "batch";

interface Seen {
  readonly atMs: number;
  readonly taskId: string;
  readonly kind: ClientEvent["kind"];
  readonly addr: string;
  readonly path: SubmitPath;
}

/**
 * SdkEvents keeps what the soak's client did (its ClientEvents, timed on performance.now()), so that
 * a fault can say what it caused (runs given up on a partitioned Worker, submissions followed as
 * uncertain after a lost answer) and the report can count them. A submitUncertain of the batch
 * path that no `submitting` of the same task preceded came from a SubmitTasks (runTask's path says
 * `submitting` before each SubmitTask, the batch path does not).
 */
export class SdkEvents {
  private readonly seen: Seen[] = [];
  private readonly lastKind = new Map<string, ClientEvent["kind"]>();

  record(e: ClientEvent, batched: boolean): void {
    const taskId = "taskId" in e ? e.taskId : "";
    const before = this.lastKind.get(taskId);
    if (taskId) this.lastKind.set(taskId, e.kind);
    const addr = "workerAddr" in e ? e.workerAddr : e.kind === "attached" ? e.runningOn : "";
    const path: SubmitPath = e.kind === "submitUncertain" && batched && before !== "submitting" ? "batch" : "single";
    this.seen.push({ atMs: performance.now(), taskId, kind: e.kind, addr, path });
  }

  /** resubmittedAt: when the client first sent one of `taskIds` to a Worker other than `addr` since `sinceMs` (null: not yet). */
  resubmittedAt(taskIds: readonly string[], addr: string, sinceMs: number): number | null {
    const ids = new Set(taskIds);
    const s = this.seen.find((x) => x.atMs >= sinceMs && x.kind === "submitting" && x.addr !== addr && ids.has(x.taskId));
    return s ? s.atMs : null;
  }

  /** count: events of `kind` (of a Worker, since a time, from a path) so far. */
  count(kind: ClientEvent["kind"], o: { addr?: string; sinceMs?: number; path?: SubmitPath } = {}): number {
    return this.seen.filter((s) => s.kind === kind && (o.addr === undefined || s.addr === o.addr) && (o.sinceMs === undefined || s.atMs >= o.sinceMs) && (o.path === undefined || s.path === o.path)).length;
  }
}

/**
 * PausedRuns: how the runs a paused Worker held ended once it resumed (asked of that Worker while
 * it still remembers them). `refused`: FAILED because a commit was refused as no longer current
 * (the client had given the run up and a new run had taken the task over: the fence stopped a run
 * that came back); `leaseEnded`: ended by the Worker itself, its lease having expired; `succeeded`:
 * finished (the client had not given it up, or it was done before the new run's claim); `other`:
 * any other end, or an answer that never came.
 */
export class PausedRuns {
  readonly counts = { refused: 0, leaseEnded: 0, succeeded: 0, other: 0 };
  private readonly pending: Promise<void>[] = [];

  /** tally counts the ends of one pause's runs (snapshots of the tasks that were RUNNING when it began). */
  tally(ends: readonly (TaskSnapshot | undefined)[]): { refused: number; leaseEnded: number; succeeded: number; other: number } {
    const one = { refused: 0, leaseEnded: 0, succeeded: 0, other: 0 };
    for (const s of ends) {
      const e = s?.error;
      if (s?.state === TaskState.SUCCEEDED) one.succeeded++;
      else if (s?.state === TaskState.FAILED && e?.code === "STALE_RUN") e.message.includes("lease") ? one.leaseEnded++ : one.refused++;
      else one.other++;
    }
    for (const k of Object.keys(one) as (keyof typeof one)[]) this.counts[k] += one[k];
    return one;
  }

  /** track: an inquiry still under way (the soak waits for every one before it reports). */
  track(p: Promise<void>): void {
    this.pending.push(p);
  }

  async settled(): Promise<void> {
    await Promise.all(this.pending);
  }
}
