import type { CallFence } from "./run-fence";
import { type CommitCounts, type ReplaceOutcome, TableStoreError, type TableStoreErrorCode, type TableWrite } from "./table-store";

/** One call's commit as the group path takes it; `issuedMs`: when the Worker sent it (the lease is judged then). */
export interface FencedWrites {
  readonly writes: readonly TableWrite[];
  readonly fence: CallFence | null;
  readonly issuedMs?: number;
}

/** One call's result in a group commit: its outcomes, or the error that wrote nothing of it. */
export type GroupCommitResult = { readonly ok: true; readonly outcomes: ReplaceOutcome[] } | { readonly ok: false; readonly code: TableStoreErrorCode; readonly message: string };

/** callResult: one call's own failure in a group (a TableStoreError); anything else is the group's and is rethrown. */
export function callResult(e: unknown): GroupCommitResult {
  if (!(e instanceof TableStoreError)) throw e;
  return { ok: false, code: e.code, message: e.message };
}

/** A group's bounds: calls, and the sum of their sizes (in the store's unit; a call over it goes alone). */
export interface GroupBounds {
  readonly maxCalls: number;
  readonly maxSize: number;
}

interface Queued<W> {
  readonly writes: W;
  readonly size: number;
  readonly resolve: (o: ReplaceOutcome[]) => void;
  readonly reject: (e: Error) => void;
}

/**
 * GroupCommitQueue is group commit for a table store: a commit that arrives while a group is being
 * written waits, and the ones waiting go together as the next group (one transaction, one durable
 * flush), each call resolved or rejected on its own once its group is done. Alone, a commit goes at
 * once: grouping adds no wait, it only shares the flush among the calls that queued behind one. A
 * `send` that throws fails every call of its group with that error (nothing of the group was written).
 */
export class GroupCommitQueue<W> {
  private queued: Queued<W>[] = [];
  private inFlight = false;
  /** Every group sent (a transaction each, groups of one too), and the calls in them (metrics, tests: commits - transactions is the calls that shared one). */
  readonly sent: CommitCounts = { transactions: 0, commits: 0 };

  constructor(
    private readonly send: (group: readonly W[]) => Promise<GroupCommitResult[]>,
    private readonly bounds: GroupBounds,
  ) {}

  /** commit queues one call's writes (`size`: for the group's bound); resolves once its group is durable. */
  commit(writes: W, size: number): Promise<ReplaceOutcome[]> {
    return new Promise<ReplaceOutcome[]>((resolve, reject) => {
      this.queued.push({ writes, size, resolve, reject });
      this.next();
    });
  }

  /** failAll rejects every call still waiting (the store closed or broke). */
  failAll(e: Error): void {
    for (const c of this.queued.splice(0)) c.reject(e);
  }

  private next(): void {
    if (this.inFlight || this.queued.length === 0) return;
    let n = 0;
    let size = 0;
    while (n < this.queued.length && n < this.bounds.maxCalls && (n === 0 || size + this.queued[n]!.size <= this.bounds.maxSize)) size += this.queued[n++]!.size;
    const group = this.queued.splice(0, n);
    this.sent.transactions++;
    this.sent.commits += group.length;
    this.inFlight = true;
    const done = (settle: () => void) => {
      this.inFlight = false;
      settle();
      this.next();
    };
    this.send(group.map((c) => c.writes)).then(
      (results) =>
        done(() =>
          group.forEach((c, i) => {
            const r = results[i];
            if (r?.ok) c.resolve(r.outcomes);
            else c.reject(new TableStoreError(r?.code ?? "INTERNAL", r?.message ?? "the group commit gave no answer for one of its calls"));
          }),
        ),
      (e: Error) => done(() => group.forEach((c) => c.reject(e))),
    );
  }
}
