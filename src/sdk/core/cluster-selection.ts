import type { Task } from "../../gen/worker/v1/worker";

export type Cluster = "block" | "bundle";

/**
 * clusterFor picks the cluster of a task as the runtime seed says: block-table calls and any
 * task with a ReturnValueHandler go to the block cluster, block bundles to the bundle cluster,
 * inputs to the bundle cluster by default. An explicit choice wins.
 */
export function clusterFor(task: Task, override?: Cluster): Cluster {
  if (override) return override;
  if (task.outputs.some((o) => o.handler?.$case === "returnValue")) return "block";
  const config = task.functionCallConfig?.config;
  if (config?.$case === "blockTable") return "block";
  return "bundle";
}

/**
 * resubmitByDefault: a task whose outputs are all idempotent (block_table_write replaces per
 * block, return_value is the caller's) may run again when its Worker is lost; an append to a
 * normal table could duplicate rows, so such a task is resubmitted only when the caller opts in.
 */
export function resubmitByDefault(task: Task): boolean {
  return task.outputs.every((o) => o.handler?.$case === "blockTableWrite" || o.handler?.$case === "returnValue");
}
