import pkg from "../../package.json";

// Replaced by `bun build --define` in `make build` and `make dist`; absent when run from source.
declare const BLOCKX_BUILD_COMMIT: string | undefined;
// The digest of the sources the binary was built from (Makefile SOURCE_DIGEST): the tests refuse a
// binary whose digest is not that of the tree under test.
declare const BLOCKX_SOURCE_DIGEST: string | undefined;
// The build date (ISO 8601, UTC): SOURCE_DATE_EPOCH when set, else the commit's time, so two
// builds of one commit are byte for byte the same (README "Release archives").
declare const BLOCKX_BUILD_DATE: string | undefined;
// The platform the binary was compiled for (`make dist` cross-compiles: linux-x64, linux-arm64).
declare const BLOCKX_BUILD_TARGET: string | undefined;

export const buildInfo = Object.freeze({
  version: pkg.version,
  commit: typeof BLOCKX_BUILD_COMMIT === "string" ? BLOCKX_BUILD_COMMIT : "source",
  sourceDigest: typeof BLOCKX_SOURCE_DIGEST === "string" ? BLOCKX_SOURCE_DIGEST : "source",
  buildDate: typeof BLOCKX_BUILD_DATE === "string" ? BLOCKX_BUILD_DATE : "unknown",
  target: typeof BLOCKX_BUILD_TARGET === "string" ? BLOCKX_BUILD_TARGET : `${process.platform}-${process.arch}`,
  bunVersion: Bun.version,
});

/**
 * versionLine is what `blockx version` prints. The tests read the digest from its closing
 * `sources <digest>)`: keep that part last.
 */
export function versionLine(): string {
  const b = buildInfo;
  return `blockx ${b.version} (commit ${b.commit}, built ${b.buildDate}, ${b.target}, bun ${b.bunVersion}, sources ${b.sourceDigest})`;
}
