import {
  LegacyBlockWorkerRegistryPrefix,
  LegacyBundleWorkerRegistryPrefix,
  parseRegistryPrefix,
  ProdDefaultBundleWorkerRegistryPrefix,
} from "../../common/registry/registry-prefix";

/**
 * Profile is the identity of a Coordinator process (the seed's `app.Profile`): which cluster
 * it serves, which gRPC service it registers, and the registry prefixes it watches unless
 * COORDINATOR_REGISTRY_PREFIXES replaces them.
 */
export interface Profile {
  readonly deployment: "block" | "bundle";
  readonly service: "coordinator.v1.CoordinatorService" | "bundlecoordinator.v1.BundleCoordinatorService";
  readonly workerRegistryPrefixes: readonly string[];
}

export const blockProfile: Profile = Object.freeze({
  deployment: "block",
  service: "coordinator.v1.CoordinatorService",
  workerRegistryPrefixes: [LegacyBlockWorkerRegistryPrefix],
});

export const bundleProfile: Profile = Object.freeze({
  deployment: "bundle",
  service: "bundlecoordinator.v1.BundleCoordinatorService",
  workerRegistryPrefixes: [LegacyBundleWorkerRegistryPrefix, ProdDefaultBundleWorkerRegistryPrefix],
});

/**
 * validateRegistryPrefixes returns the problems with a prefix list for this profile: every
 * prefix must parse, name this profile's kind of Worker, and appear once.
 */
export function validateRegistryPrefixes(profile: Profile, prefixes: readonly string[]): string[] {
  const problems: string[] = [];
  if (prefixes.length === 0) problems.push("at least one registry prefix is required");
  const seen = new Set<string>();
  for (const p of prefixes) {
    if (seen.has(p)) problems.push(`prefix ${JSON.stringify(p)} is listed twice`);
    seen.add(p);
    try {
      const parsed = parseRegistryPrefix(p);
      if (parsed.kind !== profile.deployment) {
        problems.push(
          `prefix ${JSON.stringify(p)} names ${parsed.kind} workers, but this is the ${profile.deployment} coordinator`,
        );
      }
    } catch (e) {
      problems.push((e as Error).message);
    }
  }
  return problems;
}
