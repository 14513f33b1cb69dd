import pkg from "../../package.json";

// Replaced by `bun build --define` in `make build`; absent when run from source.
declare const BLOCKX_BUILD_COMMIT: string | undefined;
// The digest of the sources the binary was built from (Makefile SOURCE_DIGEST): the tests refuse a
// binary whose digest is not that of the tree under test.
declare const BLOCKX_SOURCE_DIGEST: string | undefined;

export const buildInfo = Object.freeze({
  version: pkg.version,
  commit: typeof BLOCKX_BUILD_COMMIT === "string" ? BLOCKX_BUILD_COMMIT : "source",
  sourceDigest: typeof BLOCKX_SOURCE_DIGEST === "string" ? BLOCKX_SOURCE_DIGEST : "source",
  bunVersion: Bun.version,
});
