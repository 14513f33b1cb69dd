/**
 * Registry prefixes under which Workers publish heartbeats (the seed's `api/etcd/registry.go`).
 * Legacy: `/blockx/workers/` (block), `/blockx/bundle-workers/` (bundle).
 * v2: `/blockx/{env}/lanes/{lane}/{block|bundle}-workers/` with env `prod` or `test`.
 */
export const LegacyBlockWorkerRegistryPrefix = "/blockx/workers/";
export const LegacyBundleWorkerRegistryPrefix = "/blockx/bundle-workers/";
export const ProdDefaultBlockWorkerRegistryPrefix = "/blockx/prod/lanes/default/block-workers/";
export const ProdDefaultBundleWorkerRegistryPrefix = "/blockx/prod/lanes/default/bundle-workers/";
export const TestDefaultBlockWorkerRegistryPrefix = "/blockx/test/lanes/default/block-workers/";
export const TestDefaultBundleWorkerRegistryPrefix = "/blockx/test/lanes/default/bundle-workers/";

export type WorkerKind = "block" | "bundle";
export type RegistryFormat = "legacy" | "v2";

export interface RegistryPrefix {
  /** The exact prefix, always ending in "/". */
  prefix: string;
  kind: WorkerKind;
  format: RegistryFormat;
  /** v2 only. */
  env?: "prod" | "test";
  /** v2 only. */
  lane?: string;
}

const V2_PATTERN = /^\/blockx\/(prod|test)\/lanes\/([A-Za-z0-9][A-Za-z0-9_-]*)\/(block|bundle)-workers\/$/;

/**
 * ParseRegistryPrefix accepts exactly the legacy prefixes and the v2 form, and says which
 * kind of Worker and which format it names. Anything else is an error with the reason.
 */
export function parseRegistryPrefix(prefix: string): RegistryPrefix {
  if (prefix === LegacyBlockWorkerRegistryPrefix) return { prefix, kind: "block", format: "legacy" };
  if (prefix === LegacyBundleWorkerRegistryPrefix) return { prefix, kind: "bundle", format: "legacy" };
  const m = V2_PATTERN.exec(prefix);
  if (m) {
    return { prefix, kind: m[3] as WorkerKind, format: "v2", env: m[1] as "prod" | "test", lane: m[2]! };
  }
  throw new Error(
    `unknown registry prefix ${JSON.stringify(prefix)}: expected ${LegacyBlockWorkerRegistryPrefix}, ` +
      `${LegacyBundleWorkerRegistryPrefix} or /blockx/{prod|test}/lanes/{lane}/{block|bundle}-workers/`,
  );
}
