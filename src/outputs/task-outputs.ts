import type { TableWriteSummary } from "../gen/worker/v1/worker";
import { CallErrorCode } from "../runtime/calls/call";
import type { JsonValue } from "../runtime/json/raw-json";
import type { OutputSpec, WriterDeps } from "./output";
import { openWriters } from "./output-kinds";
import type { RunFence } from "./stores/run-fence";
import type { TableWriter } from "./stores/table-owner";
import { commitRejection } from "./table-outputs";
import type { WriteRejected, WrittenCall, Writer } from "./writer";

/**
 * CommitOutcome: what a finished call's commit came to. `storeReached`: the table store answered
 * (true), could not be reached (false: STORE_UNAVAILABLE), or was not asked (undefined: nothing to
 * write there); the Worker's health reads it.
 */
export type CommitOutcome = { readonly ok: true; readonly storeReached?: true } | { readonly ok: false; readonly rejected: WriteRejected; readonly storeReached?: false };

/**
 * TaskOutputs is a task's output set: one writer per output, in the task's order, and the commit
 * path. For each succeeded call, `commit` stages the value with every writer and commits all their
 * table writes in one transaction (under the task's run fence, if it has one), then tells each
 * writer; `finish` is the WRITE phase. Nothing of a failed commit is written, and no writer hears
 * `committed` for it. The task runner hands it finished calls and never writes itself.
 */
export class TaskOutputs {
  private constructor(
    private readonly writers: readonly Writer[],
    private readonly deps: WriterDeps,
    private readonly fence: RunFence | null,
    private readonly writer: TableWriter | null,
  ) {}

  /**
   * open makes the task's writers (WriterSetupError when this Worker cannot: no table store, no
   * block scope). `writer`: who the task's commits are from (the tables it makes are its; null: no
   * identity, under BLOCKX_INSECURE).
   */
  static open(outputs: readonly OutputSpec[], deps: WriterDeps, fence: RunFence | null, writer: TableWriter | null = null): TaskOutputs {
    return new TaskOutputs(openWriters(outputs, deps), deps, fence, writer);
  }

  /**
   * commit: one succeeded call's value through every writer, its table writes in one transaction.
   * A value a writer cannot take is the user's error (not retried); a store that is down is
   * STORE_UNAVAILABLE (retried with backoff); a run no longer current is STALE_RUN; a table of
   * another identity NOT_OWNER.
   */
  async commit(call: WrittenCall): Promise<CommitOutcome> {
    let asked = false;
    try {
      const staged = this.writers.map((w) => w.stage(call));
      const all = staged.flat();
      asked = all.length > 0;
      const outcomes = asked ? await this.deps.tables!.commit(all, this.fence ? { ...this.fence, callIndex: call.index, writer: this.writer } : null) : [];
      let at = 0;
      this.writers.forEach((w, i) => {
        w.committed(call, outcomes.slice(at, at + staged[i]!.length));
        at += staged[i]!.length;
      });
      return asked ? { ok: true, storeReached: true } : { ok: true };
    } catch (e) {
      const rejected = commitRejection(e);
      return asked && rejected.code === CallErrorCode.StoreUnavailable ? { ok: false, rejected, storeReached: false } : { ok: false, rejected };
    }
  }

  /** finish is the WRITE phase: each writer's closing step, once every call succeeded. */
  finish(): void {
    for (const w of this.writers) w.finish();
  }

  /** The tables written so far, for GetTaskResult. */
  summaries(): TableWriteSummary[] {
    return this.writers.flatMap((w) => w.summary() ?? []);
  }

  /** resultBytes: JSON bytes of the return values kept (what the task's result holds in memory). */
  resultBytes(): number {
    return this.writers.reduce((n, w) => n + ((w as { resultBytes?: () => number }).resultBytes?.() ?? 0), 0);
  }

  /** The task's return values in input order (a return_value output, once sealed by `finish`); [] otherwise. */
  returnValues(): readonly JsonValue[] {
    return this.writers.map((w) => w.returnValues()).find((v) => v !== undefined) ?? [];
  }
}
