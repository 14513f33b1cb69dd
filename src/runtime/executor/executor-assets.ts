import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const REPO_EXECUTOR_DIR = join(import.meta.dir, "..", "..", "..", "executor-py");
/** Embedded by `bun build --asset executor-py/blockx_executor`, under this name prefix. */
const EMBEDDED_PACKAGE = /^blockx_executor\/[A-Za-z0-9_/]+\.py$/;

/**
 * executorPythonPath returns a directory to put on PYTHONPATH that holds the blockx_executor
 * package. From source, that is the checkout's executor-py/. In the compiled binary, the .py
 * files are embedded and unpacked once into `<cacheDir>/executor-<sha256 of the files>`,
 * written to a temporary folder and renamed, so concurrent starts are safe and a changed
 * binary never reuses stale files. The folder is world-readable: executors may run as an
 * unprivileged user (which must be able to reach cacheDir).
 */
export async function executorPythonPath(cacheDir: string): Promise<string> {
  if (!Bun.isStandaloneExecutable) return REPO_EXECUTOR_DIR;
  const files = Bun.embeddedFiles
    .map((blob) => ({ name: (blob as Blob & { name: string }).name, blob }))
    .filter((f) => EMBEDDED_PACKAGE.test(f.name))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  if (!files.some((f) => f.name === "blockx_executor/__main__.py")) {
    throw new Error("this blockx binary carries no executor files (built without --asset executor-py/blockx_executor)");
  }
  const contents = await Promise.all(files.map(async (f) => new Uint8Array(await f.blob.arrayBuffer())));
  const hash = createHash("sha256");
  files.forEach((f, i) => hash.update(f.name).update("\0").update(contents[i]!).update("\0"));
  const root = cacheDir || join(tmpdir(), "blockx-cache");
  const target = join(root, `executor-${hash.digest("hex").slice(0, 16)}`);
  if (existsSync(join(target, "blockx_executor", "__main__.py"))) return target;
  mkdirSync(root, { recursive: true, mode: 0o755 });
  const staging = `${target}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  files.forEach((f, i) => {
    const dest = join(staging, f.name);
    mkdirSync(dirname(dest), { recursive: true, mode: 0o755 });
    writeFileSync(dest, contents[i]!, { mode: 0o644 });
  });
  for (const d of new Set(files.map((f) => dirname(join(staging, f.name))))) chmodSync(d, 0o755);
  chmodSync(staging, 0o755);
  try {
    renameSync(staging, target);
  } catch {
    // Another process unpacked the same files first.
    rmSync(staging, { recursive: true, force: true });
  }
  return target;
}
