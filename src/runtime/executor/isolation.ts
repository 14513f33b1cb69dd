import { accessSync, constants, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import type { ExecutorPoolConfig } from "./executor-pool-config";
import { ExecutorStartError } from "./executor-start-error";

/** Where `make deps` and `make demo` unpack Debian's bubblewrap, relative to a checkout (no system install). */
export const BWRAP_CACHE_PATH = ".cache/bubblewrap/root/usr/bin/bwrap";

/** checkoutOf: the checkout this program runs from: dist/blockx -> its parent's parent; from source, src/main.ts's. */
function checkoutOf(): string {
  return dirname(dirname(Bun.isStandaloneExecutable ? process.execPath : Bun.main));
}

/**
 * locateBwrap resolves EXECUTOR_BWRAP: a path as given; a bare name on PATH; and for the default
 * `bwrap` missing from PATH, the copy `make demo`/`make deps` unpacked into the checkout the binary
 * runs from (a fresh machine without Debian's bubblewrap installed). Not the current directory's:
 * a role never runs a sandbox it happened to find where it was started. None: the name as given
 * (starting it then fails with the sandbox check's message).
 */
export function locateBwrap(bwrap: string, where: { path: string; checkout: string } = { path: process.env.PATH ?? "", checkout: checkoutOf() }): string {
  if (bwrap.includes("/")) return bwrap;
  const onPath = Bun.which(bwrap, { PATH: where.path });
  if (onPath) return onPath;
  if (bwrap === "bwrap") {
    const cached = join(where.checkout, BWRAP_CACHE_PATH);
    try {
      accessSync(cached, constants.X_OK);
      return cached;
    } catch {
      // not unpacked here
    }
  }
  return bwrap;
}

export interface Isolation {
  /** Prepended to the executor's command line. */
  readonly argvPrefix: readonly string[];
  /** The unprivileged identity executors run as, or null (same user as this process). */
  readonly runAs: { readonly uid: number; readonly gid: number; readonly name: string } | null;
  readonly networkNamespace: boolean;
  /** Executors lead their own session and process group: killing the group also kills anything they forked. */
  readonly ownProcessGroup: boolean;
  /**
   * EXECUTOR_SANDBOX=on: executors start in a bubblewrap sandbox (sandbox/bwrap-sandbox.ts), which
   * the pool builds per executor; `bwrap` is its resolved path, `setpriv` the one used to drop to
   * `runAs` inside it (as root). Null when off.
   */
  readonly sandbox: { readonly bwrap: string; readonly setpriv: string | null } | null;
  /** What the host did not allow, for an operator to read (logged as warnings at start). */
  readonly warnings: readonly string[];
}

function run(argv: string[]): { ok: boolean; out: string } {
  try {
    const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
    return { ok: r.exitCode === 0, out: r.stdout.toString().trim() || r.stderr.toString().trim() };
  } catch (e) {
    return { ok: false, out: (e as Error).message };
  }
}

/**
 * resolveIsolation decides, once per pool, how executors are fenced in on this host:
 * - `setsid`, so that an executor leads its own process group and killing the group takes
 *   whatever it forked with it;
 * - `setpriv --pdeathsig KILL` always, so executors die with their owner;
 * - as root: a network namespace of their own (`unshare -n`) and an unprivileged user
 *   (`setpriv --reuid/--regid --clear-groups`), each only if the host allows it;
 * - RLIMIT_NPROC, a scratch directory and an audit hook denying fork/exec and sockets are set
 *   by the executor itself, everywhere.
 * Whatever the host does not allow is skipped with a warning instead of failing the start.
 */
export function resolveIsolation(config: ExecutorPoolConfig): Isolation {
  const warnings: string[] = [];
  const isRoot = process.getuid?.() === 0;
  const prefix: string[] = [];
  let networkNamespace = false;
  const ownProcessGroup = run(["setsid", "--", "true"]).ok;
  if (ownProcessGroup) prefix.push("setsid", "--");
  else warnings.push("setsid not found: processes an executor forks are not killed with it");

  if (config.sandbox === "on") {
    // The sandbox gives executors their network namespace and, as root, drops them to runAs itself.
    const bwrap = locateBwrap(config.bwrap);
    let runAs: Isolation["runAs"] = null;
    let setpriv: string | null = null;
    if (isRoot) {
      // Its real path: the sandbox mounts this file, and a link's folder (PATH's) is not mounted there.
      const found = Bun.which("setpriv");
      setpriv = found && realpathSync(found);
      if (!setpriv) throw new ExecutorStartError("EXECUTOR_SANDBOX_UNAVAILABLE", "setpriv (util-linux) is not installed: as root, sandboxed executors drop to EXECUTOR_USER with it");
      runAs = config.user === "" ? null : lookUpUser(config.user);
      if (config.user !== "" && !runAs) throw new ExecutorStartError("EXECUTOR_SANDBOX_UNAVAILABLE", `EXECUTOR_USER ${JSON.stringify(config.user)} does not exist`);
      if (!runAs) {
        setpriv = null;
        warnings.push("EXECUTOR_USER is empty: sandboxed executors keep root's uid inside a user namespace");
      }
    }
    return { argvPrefix: prefix, runAs, networkNamespace: true, ownProcessGroup, sandbox: { bwrap, setpriv }, warnings };
  }
  warnings.push(SANDBOX_OFF_WARNING);

  if (config.networkIsolation === "on") {
    if (!isRoot) {
      warnings.push("not running as root: executors share the host's network namespace (user code is still denied sockets by an audit hook)");
    } else if (run(["unshare", "-n", "--", "true"]).ok) {
      prefix.push("unshare", "-n", "--");
      networkNamespace = true;
    } else {
      warnings.push("unshare -n is not allowed on this host: executors share the host's network namespace (sockets still denied by an audit hook)");
    }
  }

  const haveSetpriv = run(["setpriv", "--help"]).ok;
  let runAs: Isolation["runAs"] = null;
  if (!haveSetpriv) {
    warnings.push("setpriv not found: executors are not tied to this process's life and run as this user");
  } else {
    prefix.push("setpriv", "--pdeathsig", "KILL");
    if (isRoot && config.user !== "") {
      const uid = run(["id", "-u", config.user]);
      const gid = run(["id", "-g", config.user]);
      if (uid.ok && gid.ok) {
        runAs = { uid: Number(uid.out), gid: Number(gid.out), name: config.user };
        prefix.push(`--reuid=${runAs.uid}`, `--regid=${runAs.gid}`, "--clear-groups");
      } else {
        warnings.push(`EXECUTOR_USER ${JSON.stringify(config.user)} does not exist: executors run as root`);
      }
    } else if (isRoot) {
      warnings.push("EXECUTOR_USER is empty: executors run as root");
    } else if (config.user !== "") {
      warnings.push(`not running as root: EXECUTOR_USER=${config.user} ignored, executors run as this user`);
    }
    prefix.push("--");
  }
  return { argvPrefix: prefix, runAs, networkNamespace, ownProcessGroup, sandbox: null, warnings };
}

/** What EXECUTOR_SANDBOX=off gives up, logged at every start (and said by --help). */
export const SANDBOX_OFF_WARNING =
  "EXECUTOR_SANDBOX=off: USER CODE IS NOT SANDBOXED. Only an in-process audit hook (which a hostile function can get " +
  "around) stands between it and whatever this host's EXECUTOR_USER can reach: /etc/blockx, the table store, other " +
  "executors' scratch folders and calls, other processes, and the network where executors share it";

function lookUpUser(name: string): { uid: number; gid: number; name: string } | null {
  const uid = run(["id", "-u", name]);
  const gid = run(["id", "-g", name]);
  return uid.ok && gid.ok ? { uid: Number(uid.out), gid: Number(gid.out), name } : null;
}

/**
 * resolvePython turns EXECUTOR_PYTHON into the interpreter's real path (a pyenv shim costs
 * about 500 ms per spawn; a link is followed to its file) and checks its version.
 */
export function resolvePython(python: string): string {
  // The real file (a link's folder, e.g. a PATH of links, is not mounted in the sandbox); executors need no venv.
  const r = run([python, "-c", "import os, sys; print(os.path.realpath(sys.executable)); print('%d.%d' % sys.version_info[:2])"]);
  if (!r.ok) throw new Error(`EXECUTOR_PYTHON ${JSON.stringify(python)} cannot be run: ${r.out}`);
  const [path, version] = r.out.split("\n");
  const [major, minor] = (version ?? "0.0").split(".").map(Number);
  if (major !== 3 || (minor ?? 0) < 10) throw new Error(`EXECUTOR_PYTHON ${python} is Python ${version}; 3.10 or newer is required`);
  return path || python;
}
