import type { RunFence } from "../../src/outputs/stores/run-fence";
import type { TableStore, TableWrite } from "../../src/outputs/stores/table-store";

/** How a backfill's commits reach a store, as Workers' task runners drive them. */
export interface BackfillShape {
  readonly blocks: number;
  /** Blocks per task. */
  readonly taskBlocks: number;
  /** Tasks at once (the SDK's runTasks concurrency). */
  readonly tasks: number;
  /** Calls committing at once, in all (so their commits share group commits). */
  readonly inFlight: number;
}

/**
 * driveBackfill writes shape.blocks blocks through `store` as a client's backfill does: tasks of
 * taskBlocks blocks, `tasks` of them at once, each running inFlight / tasks calls at once, one
 * commit per block (`write(block)`); with `fenced`, each task first claims its run under `epoch`
 * and commits under its fence. Returns the seconds it took; the caller measures CPU around it.
 */
export async function driveBackfill(store: TableStore, shape: BackfillShape, tableTag: string, write: (block: number) => TableWrite[], fenced: boolean, epoch = "bench-epoch"): Promise<number> {
  const taskCount = Math.ceil(shape.blocks / shape.taskBlocks);
  const callsPerTask = Math.max(1, Math.floor(shape.inFlight / shape.tasks));
  const runTask = async (task: number) => {
    let fence: RunFence | null = null;
    if (fenced) {
      const c = await store.claimRun({ taskId: `${tableTag}-task-${task}`, epoch, workerAddr: "bench", supersede: false });
      if (c.kind !== "claimed") throw new Error(`claim refused: ${JSON.stringify(c)}`);
      fence = c.fence;
    }
    const from = task * shape.taskBlocks;
    const to = Math.min(shape.blocks, from + shape.taskBlocks);
    let next = from;
    const call = async () => {
      for (let b = next++; b < to; b = next++) await store.commit(write(b), fence ? { ...fence, callIndex: b - from } : null);
    };
    await Promise.all(Array.from({ length: callsPerTask }, call));
    if (fence) await store.endRun(fence, "SUCCEEDED");
  };
  const t0 = performance.now();
  let nextTask = 0;
  const client = async () => {
    for (let t = nextTask++; t < taskCount; t = nextTask++) await runTask(t);
  };
  await Promise.all(Array.from({ length: shape.tasks }, client));
  return (performance.now() - t0) / 1000;
}
