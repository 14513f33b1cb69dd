import { LegacyBlockWorkerRegistryPrefix, LegacyBundleWorkerRegistryPrefix } from "../../common/registry/registry-prefix";

export type CallConfigKind = "blockTable" | "inputs" | "blockBundle";
export type OutputKind = "blockTableWrite" | "normalTableWrite" | "returnValue";

/**
 * WorkerProfile: the two clusters run the same Worker with different profiles (runtime seed,
 * two-cluster table): where it registers, which call configs and writers it accepts, and
 * whether BUILD streams by default.
 */
export interface WorkerProfile {
  readonly deployment: "block" | "bundle";
  readonly registryPrefix: string;
  readonly callConfigs: readonly CallConfigKind[];
  readonly outputs: readonly OutputKind[];
  readonly streamBuild: boolean;
}

export const blockWorkerProfile: WorkerProfile = Object.freeze<WorkerProfile>({
  deployment: "block",
  registryPrefix: LegacyBlockWorkerRegistryPrefix,
  callConfigs: ["blockTable", "inputs", "blockBundle"],
  outputs: ["blockTableWrite", "normalTableWrite", "returnValue"],
  streamBuild: false,
});

export const bundleWorkerProfile: WorkerProfile = Object.freeze<WorkerProfile>({
  deployment: "bundle",
  registryPrefix: LegacyBundleWorkerRegistryPrefix,
  callConfigs: ["blockBundle", "inputs"],
  outputs: ["blockTableWrite", "normalTableWrite"],
  streamBuild: true,
});
