import { createHash } from "node:crypto";
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { ExecutorStartError } from "./executor-start-error";
import { blockingFolder, describeBlock, type Identity } from "./path-access";

const REPO_EXECUTOR_DIR = join(import.meta.dir, "..", "..", "..", "executor-py");
const REPO_CLIENT_DIR = join(import.meta.dir, "..", "..", "..", "client-py");
/**
 * Embedded by `bun build --asset executor-py/blockx_executor --asset client-py` (`--asset
 * client-py/blockx` would collide with the binary's own name), under these name prefixes: the
 * executor, and blockx-py itself, so that a function can `import blockx` (its
 * `blockx.function(...).call` runs as a sub-call there; `blockx.Context` type hints resolve).
 */
const EMBEDDED_PACKAGE = /^(blockx_executor|blockx)\/[A-Za-z0-9_/]+\.py$/;
/** blockx-py's files in the binary are named `client-py/blockx/...`; executors import them as `blockx/...`. */
const embeddedName = (name: string): string => name.replace(/^client-py\//, "");
/** The system's own temporary folder: the fallback home when TMPDIR is private. */
const SYSTEM_TMP = "/tmp";

interface PackageFile {
  readonly name: string;
  readonly content: Uint8Array;
}

/** The blockx_executor and blockx files: embedded in the compiled binary, or read from the checkout. */
async function packageFiles(): Promise<PackageFile[]> {
  if (Bun.isStandaloneExecutable) {
    const files = Bun.embeddedFiles
      .map((blob) => ({ name: embeddedName((blob as Blob & { name: string }).name), blob }))
      .filter((f) => EMBEDDED_PACKAGE.test(f.name));
    if (!files.some((f) => f.name === "blockx_executor/__main__.py")) {
      throw new ExecutorStartError("EXECUTOR_CODE_MISSING", "this blockx binary carries no executor files (built without --asset executor-py/blockx_executor)");
    }
    return Promise.all(files.map(async (f) => ({ name: f.name, content: new Uint8Array(await f.blob.arrayBuffer()) })));
  }
  return [
    [REPO_EXECUTOR_DIR, "blockx_executor"],
    [REPO_CLIENT_DIR, "blockx"],
  ].flatMap(([repoDir, pkg]) =>
    (readdirSync(join(repoDir!, pkg!), { recursive: true }) as string[])
      .map((rel) => `${pkg}/${rel}`)
      .filter((name) => EMBEDDED_PACKAGE.test(name) && !name.includes("__pycache__"))
      .map((name) => ({ name, content: new Uint8Array(readFileSync(join(repoDir!, name))) })),
  );
}

/**
 * executorPythonPath returns a directory to put on PYTHONPATH that holds the blockx_executor
 * package, always a copy made for executors: the files (embedded in the compiled binary, or the
 * checkout's executor-py/ when run from source) are unpacked once into
 * `<home>/executor-<sha256 of the files>`, written to a temporary folder and renamed, so
 * concurrent starts are safe and a changed binary or checkout never reuses stale files. The copy
 * is world-readable, so that executors running as `runAs` (EXECUTOR_USER) import it wherever the
 * clone or the binary lives (a `mktemp -d` folder and /root are mode 0700).
 *
 * The home is BLOCKX_CACHE_DIR when set; it must be reachable by `runAs`, else an
 * ExecutorStartError names the folder that blocks it. Unset, it is `<tmpdir>/blockx-cache`, or
 * `/tmp/blockx-cache` when TMPDIR itself is out of `runAs`'s reach, or `/tmp/blockx-cache-<uid>`
 * when another user made the shared one and this one cannot write into it.
 */
export async function executorPythonPath(cacheDir: string, runAs: Identity | null = null): Promise<string> {
  const files = (await packageFiles()).sort((a, b) => (a.name < b.name ? -1 : 1));
  const hash = createHash("sha256");
  for (const f of files) hash.update(f.name).update("\0").update(f.content).update("\0");
  const leaf = `executor-${hash.digest("hex").slice(0, 16)}`;

  // Unset: the shared default, then one of this user's own (on a machine shared by several users, the
  // first to run made the shared one, and the others cannot write into it).
  const uid = process.getuid?.() ?? 0;
  const homes = cacheDir
    ? [{ root: resolve(cacheDir), what: `BLOCKX_CACHE_DIR ${resolve(cacheDir)}` }]
    : [...new Set([join(tmpdir(), "blockx-cache"), join(SYSTEM_TMP, "blockx-cache"), join(SYSTEM_TMP, `blockx-cache-${uid}`)])].map((root) => ({ root: resolve(root), what: `the executor code folder ${resolve(root)}` }));
  let lastProblem = "";
  for (const { root, what } of homes) {
    let target = join(root, leaf);
    try {
      unpack(files, root, target, !cacheDir);
    } catch (e) {
      const code = (e as { code?: string }).code ?? "";
      if (cacheDir || !["EACCES", "EPERM", "EROFS"].includes(code)) throw e;
      lastProblem = `${what} cannot be written by this user: ${(e as Error).message}`;
      continue;
    }
    // A copy someone else could have made or can change (another user in a shared /tmp) is never
    // imported: the executors would run their code. Unpack into a fresh folder of our own instead.
    const distrust = untrustedCopy(target, files);
    if (distrust) {
      const own = mkdtempSync(join(SYSTEM_TMP, `blockx-${leaf}-`));
      writeFiles(files, own);
      const still = untrustedCopy(own, files);
      if (still) throw new ExecutorStartError("EXECUTOR_CODE_UNTRUSTED", `the executor code copy ${own} cannot be trusted: ${still}`);
      process.emitWarning(`not using the executor code at ${target} (${distrust}); using ${own}`);
      target = own;
    }
    const blocked = runAs ? blockingFolder(join(target, "blockx_executor", "__main__.py"), runAs) : null;
    if (!blocked) return target;
    lastProblem = `${what} is not readable by EXECUTOR_USER ${runAs!.name} (uid ${runAs!.uid}): ${describeBlock(blocked)}`;
  }
  throw new ExecutorStartError(
    "EXECUTOR_CODE_UNREADABLE",
    runAs
      ? `${lastProblem}. Executors run as ${runAs.name} and import their code from there: set BLOCKX_CACHE_DIR to a folder ` +
          `${runAs.name} can read (e.g. /var/cache/blockx), or EXECUTOR_USER= to run executors as this user`
      : `${lastProblem}. Set BLOCKX_CACHE_DIR to a folder this user can write`,
  );
}

/**
 * untrustedCopy says why the copy at `target` must not be imported, or null when it may: every
 * folder and file of it (and its home) belongs to this process's user or root, none is a link,
 * none is writable by group or others, and the files are exactly ours, byte for byte.
 */
function untrustedCopy(target: string, files: readonly PackageFile[]): string | null {
  const me = process.getuid?.() ?? 0;
  const check = (path: string, kind: "dir" | "file"): string | null => {
    let st;
    try {
      st = lstatSync(path);
    } catch {
      return `${path} is missing`;
    }
    if (st.isSymbolicLink()) return `${path} is a symbolic link`;
    if (kind === "dir" ? !st.isDirectory() : !st.isFile()) return `${path} is not a ${kind === "dir" ? "folder" : "file"}`;
    if (st.uid !== me && st.uid !== 0) return `${path} belongs to uid ${st.uid}`;
    // A sticky folder (/tmp) lets others add entries but not replace or remove ours.
    const sticky = kind === "dir" && (st.mode & 0o1000) !== 0;
    if ((st.mode & 0o022) !== 0 && !sticky) return `${path} is writable by others (mode ${(st.mode & 0o777).toString(8)})`;
    return null;
  };
  const dirs = new Set([dirname(target), target, ...files.map((f) => dirname(join(target, f.name)))]);
  for (const d of dirs) {
    const problem = check(d, "dir");
    if (problem) return problem;
  }
  for (const f of files) {
    const path = join(target, f.name);
    const problem = check(path, "file");
    if (problem) return problem;
    if (!Buffer.from(readFileSync(path)).equals(Buffer.from(f.content))) return `${path} differs from this binary's executor code`;
  }
  return null;
}

/** writeFiles writes the package under `dir`, readable by everyone, writable by this user only. */
function writeFiles(files: readonly PackageFile[], dir: string): void {
  for (const f of files) {
    const dest = join(dir, f.name);
    mkdirSync(dirname(dest), { recursive: true, mode: 0o755 });
    writeFileSync(dest, f.content, { mode: 0o644 });
    chmodSync(dest, 0o644);
  }
  for (const d of new Set(files.map((f) => dirname(join(dir, f.name))))) chmodSync(d, 0o755);
  chmodSync(dir, 0o755);
}

function unpack(files: readonly PackageFile[], root: string, target: string, ownHome: boolean): void {
  if (existsSync(join(target, "blockx_executor", "__main__.py"))) return;
  const existed = existsSync(root);
  mkdirSync(root, { recursive: true, mode: 0o755 });
  // A home this process made (or the default one) is opened to executors whatever the umask.
  if (!existed || (ownHome && statSync(root).uid === process.getuid?.())) chmodSync(root, 0o755);
  const staging = `${target}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  writeFiles(files, staging);
  try {
    renameSync(staging, target);
  } catch {
    // Another process unpacked the same files first.
    rmSync(staging, { recursive: true, force: true });
  }
}
