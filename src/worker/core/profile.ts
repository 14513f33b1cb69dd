import type { OutputKind } from "../../outputs/output";
import { LegacyBlockWorkerRegistryPrefix, LegacyBundleWorkerRegistryPrefix } from "../../common/registry/registry-prefix";

export type CallConfigKind = "blockTable" | "inputs" | "blockBundle";
export type { OutputKind } from "../../outputs/output";

/**
 * WorkerProfile: the two clusters run the same Worker with different profiles (runtime seed,
 * two-cluster table): where it registers, and which call configs and writers it accepts. (The
 * seed's streamBuild is gone: a task's calls are built lazily and its inputs checked in full by
 * planTask before any call runs, in both clusters, so streaming or not was never observable.)
 */
export interface WorkerProfile {
  readonly deployment: "block" | "bundle";
  readonly registryPrefix: string;
  readonly callConfigs: readonly CallConfigKind[];
  readonly outputs: readonly OutputKind[];
}

export const blockWorkerProfile: WorkerProfile = Object.freeze<WorkerProfile>({
  deployment: "block",
  registryPrefix: LegacyBlockWorkerRegistryPrefix,
  callConfigs: ["blockTable", "inputs", "blockBundle"],
  outputs: ["blockTableWrite", "normalTableWrite", "returnValue"],
});

export const bundleWorkerProfile: WorkerProfile = Object.freeze<WorkerProfile>({
  deployment: "bundle",
  registryPrefix: LegacyBundleWorkerRegistryPrefix,
  callConfigs: ["blockBundle", "inputs"],
  outputs: ["blockTableWrite", "normalTableWrite"],
});
