import type { ClientEvent } from "../../src/sdk/blockx-client";

/** Which of the client's paths an event came from: runTask's single SubmitTask, or runTasks' batches. */
export type SubmitPath = "single" | "batch";

interface Seen {
  readonly atMs: number;
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
    this.seen.push({ atMs: performance.now(), kind: e.kind, addr, path });
  }

  /** count: events of `kind` (of a Worker, since a time, from a path) so far. */
  count(kind: ClientEvent["kind"], o: { addr?: string; sinceMs?: number; path?: SubmitPath } = {}): number {
    return this.seen.filter((s) => s.kind === kind && (o.addr === undefined || s.addr === o.addr) && (o.sinceMs === undefined || s.atMs >= o.sinceMs) && (o.path === undefined || s.path === o.path)).length;
  }
}
