import { randomBytes } from "node:crypto";
import { ErrorCode } from "../../common/error-code";
import type { Logger } from "../../common/logging/logger";
import { runElsewhereMessage } from "../../common/run-elsewhere";
import type { RunClaim, RunFence, RunState } from "../../outputs/stores/run-fence";
import type { TableStore } from "../../outputs/stores/table-store";
import { TableStoreError } from "../../outputs/stores/table-store";
import { TaskState } from "../../gen/worker/v1/worker";
import type { ExistingScope } from "../core/scope-alignment";
import { alignedPlan, blockTablesOf, type TaskPlan } from "../core/task-plan";
import { WorkerError } from "../core/worker-error";
import type { RunClaims } from "./worker-driver";

/** While the table store does not answer, the lease renewal (the health probe) runs at least this often. */
export const UNHEALTHY_PROBE_MS = 500;

/** A rerun aligns with at most this many earlier multi-block scopes per table (more: refused, naming the bound). */
export const MAX_ALIGNED_SCOPES = 100_000;

/** What RunFencing needs of the Worker. */
export interface RunFencingOptions {
  readonly workerAddr: string;
  /** The epoch's lease in the table store (the Worker's etcd lease TTL: one notion of "this Worker is gone"). */
  readonly leaseTtlMs: number;
  /** Called when the table store says the epoch's lease had expired: every run of it is over. */
  readonly onEpochLost: (epoch: string, message: string) => void;
}

/**
 * RunFencing is the Worker's side of fencing (src/outputs/stores/run-fence.ts): its epoch (a new one
 * per process start and after losing one) with its lease in the table store, renewed every third of
 * its TTL; the claims of table tasks under it; the ends of runs. A renewal the store refuses means
 * the Worker was away (paused, cut off from the store) past its lease: every run of that epoch is
 * over (onEpochLost) and a new epoch takes the next claims. Renewals double as the store's health
 * probe: the store is reported unhealthy while they fail, and healthy again from the first that
 * succeeds, with no task needed to find out.
 */
export class RunFencing {
  private current = "";
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;
  private healthy = true;
  private why = "";
  /** Set while the current epoch still has to be opened in the store (after a loss, or a failed open). */
  private needsOpen = true;

  constructor(
    private readonly store: TableStore,
    private readonly opts: RunFencingOptions,
    private readonly log: Logger,
  ) {}

  get epoch(): string {
    return this.current;
  }

  /** storeHealthy: the last renewal (or claim) reached the store. */
  get storeHealthy(): boolean {
    return this.healthy;
  }

  /** unhealthyReason: what the store last said when it could not be reached ("" while healthy). */
  get unhealthyReason(): string {
    return this.healthy ? "" : this.why;
  }

  /**
   * start opens the first epoch: the Worker's start-up check of its table store. It throws the
   * store's error when the store answers but cannot be used (a password or database it refuses, an
   * unwritable file), and the Worker does not register; a store that does not answer at all is
   * reported unhealthy and tried again every renewal.
   */
  async start(): Promise<void> {
    this.current = newEpoch();
    try {
      await this.store.openEpoch(this.current, this.opts.workerAddr, this.opts.leaseTtlMs);
      this.needsOpen = false;
      this.log.info({ epoch: this.current, leaseTtlMs: this.opts.leaseTtlMs, store: this.store.description }, "table store reached; epoch opened");
    } catch (e) {
      // Unreachable is not wrong: a store that is down (or not up yet) may come back; the Worker
      // starts without it, says so in its heartbeat, and opens its epoch once it answers.
      if (!(e instanceof TableStoreError) || e.code !== "STORE_UNAVAILABLE") throw e;
      this.setHealthy(false, e.message);
    }
    this.arm();
  }

  /**
   * claim asks the store for a run of `taskId` under the current epoch. An epoch the store says is
   * lost is replaced and the claim made once more under the new one.
   */
  async claim(taskId: string, resubmit: boolean): Promise<RunClaim> {
    for (let attempt = 0; ; attempt++) {
      if (this.needsOpen) await this.reopen();
      const epoch = this.current;
      const c = await this.reported(this.store.claimRun({ taskId, epoch, workerAddr: this.opts.workerAddr, supersede: resubmit }));
      if (c.kind !== "leaseLost" || attempt > 0) return c;
      this.lost(epoch, "the table store refused a claim: this Worker's lease there had expired");
    }
  }

  /** endRun records a run's end (best effort: a run left RUNNING is over anyway once its epoch's lease expires). */
  endRun(fence: RunFence, state: Exclude<RunState, "RUNNING">): Promise<void> {
    return this.store.endRun(fence, state).catch((e: unknown) => this.log.debug({ taskId: fence.taskId, err: e }, "recording a run's end failed (its lease ends it)"));
  }

  /**
   * claims: the driver's RunClaims over this store. `prepare` aligns a rerun of block tables with the
   * multi-block scopes they hold over its range (widening until no further scope is met: two tables'
   * scopes may overlap each other), then claims the run. A refusal names the Worker whose run is
   * current (TASK_RUN_ELSEWHERE); a store that cannot be reached is UNAVAILABLE (retry).
   */
  claims(): RunClaims {
    return {
      prepare: async (plan, resubmit) => {
        try {
          const aligned = await this.align(plan);
          const c = await this.claim(aligned.taskId, resubmit);
          if (c.kind === "claimed") {
            if (c.tookOver) this.log.info({ taskId: plan.taskId, generation: c.fence.generation, from: c.tookOver.workerAddr, fromGeneration: c.tookOver.generation, resubmit }, "run taken over");
            return { plan: aligned, fence: c.fence };
          }
          if (c.kind === "refused") {
            throw new WorkerError(ErrorCode.ErrTaskRunElsewhere, runElsewhereMessage({ taskId: plan.taskId, workerAddr: c.current.workerAddr, generation: c.current.generation, state: c.current.state }));
          }
          throw new WorkerError(ErrorCode.ErrUnavailable, "this Worker's lease in the table store keeps expiring: try again");
        } catch (e) {
          if (!(e instanceof TableStoreError)) throw e;
          if (e.code === "INVALID_ARGUMENT") throw new WorkerError(ErrorCode.ErrInvalidArgument, e.message);
          throw new WorkerError(ErrorCode.ErrUnavailable, `the task's run could not be claimed: ${e.message}`);
        }
      },
      end: (fence, state) => this.endRun(fence, RUN_END[state] ?? "FAILED"),
    };
  }

  private async align(plan: TaskPlan): Promise<TaskPlan> {
    const tables = blockTablesOf(plan);
    if (!plan.blocks || tables.length === 0) return plan;
    const { chain } = plan.blocks;
    let aligned = plan;
    let seen = -1;
    for (;;) {
      const b = aligned.blocks!;
      const scopes: ExistingScope[] = [];
      for (const t of tables) scopes.push(...(await this.store.wideScopes(t, chain, b.fromBlock, b.toBlock, MAX_ALIGNED_SCOPES)));
      if (scopes.length === seen) break; // nothing new met: the widened range is final
      seen = scopes.length;
      aligned = alignedPlan(plan, scopes);
      if (scopes.length === 0) break;
    }
    if (aligned !== plan) {
      this.log.info(
        { taskId: plan.taskId, tables, from: plan.blocks.fromBlock, to: plan.blocks.toBlock, alignedFrom: aligned.blocks!.fromBlock, alignedTo: aligned.blocks!.toBlock, calls: aligned.calls.total },
        "bundles aligned with the scopes written before (a rerun never cuts an earlier bundle's rows)",
      );
    }
    return aligned;
  }

  /** observe: a commit reached the store, or found it unreachable (quicker than the next renewal). */
  observe(reached: boolean, why: string): void {
    this.setHealthy(reached, why);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(): void {
    if (this.stopped) return;
    // While the store does not answer, it is asked more often: writing resumes soon after it is back.
    const everyMs = Math.floor(this.opts.leaseTtlMs / 3);
    this.timer = setTimeout(() => void this.renew(), Math.max(50, this.healthy ? everyMs : Math.min(everyMs, UNHEALTHY_PROBE_MS)));
  }

  private async renew(): Promise<void> {
    const epoch = this.current;
    try {
      if (this.needsOpen) await this.reopen();
      else if (!(await this.reported(this.store.renewEpoch(epoch, this.opts.leaseTtlMs)))) {
        this.lost(epoch, "this Worker's lease in the table store expired (paused or cut off from the store for longer than its lease)");
        await this.reopen();
      }
    } catch (e) {
      // Reported unhealthy by `reported`; the next renewal tries again (or finds the lease gone).
      if (!(e instanceof TableStoreError)) this.log.error({ err: e }, "renewing the table store lease failed unexpectedly");
    } finally {
      this.arm();
    }
  }

  private lost(epoch: string, why: string): void {
    if (epoch !== this.current) return;
    this.log.warn({ epoch }, `${why}: its runs are over; a new epoch takes the next tasks`);
    this.current = newEpoch();
    this.needsOpen = true;
    this.opts.onEpochLost(epoch, why);
  }

  private async reopen(): Promise<void> {
    await this.reported(this.store.openEpoch(this.current, this.opts.workerAddr, this.opts.leaseTtlMs));
    this.needsOpen = false;
    this.log.info({ epoch: this.current }, "new epoch opened in the table store");
  }

  /** reported: the store's answer, noting whether the store was reachable. */
  private async reported<T>(p: Promise<T>): Promise<T> {
    try {
      const out = await p;
      this.setHealthy(true);
      return out;
    } catch (e) {
      if (e instanceof TableStoreError && e.code === "STORE_UNAVAILABLE") this.setHealthy(false, e.message);
      throw e;
    }
  }

  private setHealthy(healthy: boolean, why = ""): void {
    this.why = why;
    if (healthy === this.healthy) return;
    this.healthy = healthy;
    if (healthy) this.log.info({ store: this.store.description }, "table store reachable again: writing resumes");
    else this.log.warn({ store: this.store.description, reason: why }, "table store unreachable: tasks writing tables fail retryably, and the heartbeat's error rate keeps new tasks away until it is back");
  }
}

/** How a task's end is recorded for its run. */
const RUN_END: Partial<Record<TaskState, Exclude<RunState, "RUNNING">>> = {
  [TaskState.SUCCEEDED]: "SUCCEEDED",
  [TaskState.FAILED]: "FAILED",
  [TaskState.CANCELLED]: "CANCELLED",
  [TaskState.TIMED_OUT]: "TIMED_OUT",
};

function newEpoch(): string {
  return randomBytes(12).toString("hex");
}
