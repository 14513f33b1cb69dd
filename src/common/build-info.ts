import pkg from "../../package.json";

// Replaced by `bun build --define` in `make build`; absent when run from source.
declare const BLOCKX_BUILD_COMMIT: string | undefined;

export const buildInfo = Object.freeze({
  version: pkg.version,
  commit: typeof BLOCKX_BUILD_COMMIT === "string" ? BLOCKX_BUILD_COMMIT : "source",
  bunVersion: Bun.version,
});
