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
 * resubmitByDefault: whether a task runs again when its Worker is lost. Every output is safe to
 * rerun now: block_table_write replaces per block, normal_table_write per call of the task (a
 * rerun's call replaces the rows the same call of an earlier run wrote), return_value is the
 * caller's, and the rerun fences the lost run off (its late commits are refused). So: always, unless
 * the caller says otherwise (`resubmit: false`, `--no-resubmit`).
 */
export function resubmitByDefault(_task: Task): boolean {
  return true;
}
