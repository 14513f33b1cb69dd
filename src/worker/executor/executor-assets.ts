import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";

const REPO_EXECUTOR_DIR = join(import.meta.dir, "..", "..", "..", "executor-py");
const EMBEDDED_EXECUTOR_DIR = "/$bunfs/root/executor-py";

function listPy(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[])
    .filter((f) => f.endsWith(".py") && f.startsWith("blockx_executor") && !f.includes("__pycache__"))
    .sort();
}

/**
 * executorPythonPath returns a directory to put on PYTHONPATH that holds the blockx_executor
 * package. From source, that is the checkout's executor-py/. In the compiled binary, the .py
 * files are embedded (--asset executor-py) and unpacked once into
 * `<cacheDir>/executor-<sha256 of the files>`, written to a temporary folder and renamed, so
 * concurrent starts are safe and a changed binary never reuses stale files. The folder is
 * world-readable: executors may run as an unprivileged user.
 */
export function executorPythonPath(cacheDir: string): string {
  const embedded = Bun.isStandaloneExecutable && existsSync(EMBEDDED_EXECUTOR_DIR);
  if (!embedded) return REPO_EXECUTOR_DIR;
  const files = listPy(EMBEDDED_EXECUTOR_DIR);
  if (files.length === 0) throw new Error(`no executor files embedded under ${EMBEDDED_EXECUTOR_DIR}`);
  const hash = createHash("sha256");
  const contents = files.map((f) => {
    const data = readFileSync(join(EMBEDDED_EXECUTOR_DIR, f));
    hash.update(f).update("\0").update(data).update("\0");
    return data;
  });
  const root = cacheDir || join(tmpdir(), "blockx-cache");
  const target = join(root, `executor-${hash.digest("hex").slice(0, 16)}`);
  if (existsSync(join(target, "blockx_executor", "__main__.py"))) return target;
  mkdirSync(root, { recursive: true, mode: 0o755 });
  const staging = `${target}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  files.forEach((f, i) => {
    const dest = join(staging, f);
    mkdirSync(dirname(dest), { recursive: true, mode: 0o755 });
    writeFileSync(dest, contents[i]!, { mode: 0o644 });
  });
  for (const d of new Set(files.map((f) => dirname(join(staging, f))))) chmodSync(d, 0o755);
  chmodSync(staging, 0o755);
  try {
    renameSync(staging, target);
  } catch {
    // Another process won the race with identical content.
    rmSync(staging, { recursive: true, force: true });
  }
  if (!existsSync(join(target, relative(staging, join(staging, files[0]!))))) throw new Error(`unpacking executor files into ${target} failed`);
  return target;
}
