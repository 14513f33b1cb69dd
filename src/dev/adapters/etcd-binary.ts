import { accessSync, constants } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { DevError } from "../core/dev-error";

/** The Makefile's cache, relative to a checkout. */
export const ETCD_CACHE_PATH = ".cache/etcd/root/usr/bin/etcd";

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * locateEtcd finds the etcd executable: ETCD_BIN when set (it must exist), else the Makefile's
 * cache next to the binary's checkout (dist/blockx -> ../.cache/...) or under the current
 * directory, else `etcd` on PATH. None: a DevError naming the three places.
 */
export function locateEtcd(etcdBin: string, where: { execPath: string; cwd: string; path: string }): string {
  if (etcdBin !== "") {
    if (executable(etcdBin)) return resolve(etcdBin);
    throw new DevError("ETCD_NOT_FOUND", `ETCD_BIN=${etcdBin} is not an executable file`);
  }
  const cached = [join(dirname(dirname(where.execPath)), ETCD_CACHE_PATH), join(where.cwd, ETCD_CACHE_PATH)];
  for (const c of cached) if (executable(c)) return c;
  for (const dir of where.path.split(delimiter)) {
    if (dir !== "" && executable(join(dir, "etcd"))) return join(dir, "etcd");
  }
  throw new DevError(
    "ETCD_NOT_FOUND",
    [
      "etcd not found. blockx dev looked in:",
      "  1. ETCD_BIN (not set)",
      `  2. the Makefile's cache: ${cached.join(" and ")}`,
      "  3. etcd on PATH",
      "Run `make deps` in the checkout (it unpacks Debian's etcd-server into .cache/etcd), or set ETCD_BIN=/path/to/etcd.",
    ].join("\n"),
  );
}
