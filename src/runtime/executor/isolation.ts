import type { ExecutorPoolConfig } from "./executor-pool-config";

export interface Isolation {
  /** Prepended to the executor's command line. */
  readonly argvPrefix: readonly string[];
  /** The unprivileged identity executors run as, or null (same user as this process). */
  readonly runAs: { readonly uid: number; readonly gid: number; readonly name: string } | null;
  readonly networkNamespace: boolean;
  /** Executors lead their own session and process group: killing the group also kills anything they forked. */
  readonly ownProcessGroup: boolean;
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
  return { argvPrefix: prefix, runAs, networkNamespace, ownProcessGroup, warnings };
}

/**
 * resolvePython turns EXECUTOR_PYTHON into the interpreter's real path (a pyenv shim costs
 * about 500 ms per spawn) and checks its version.
 */
export function resolvePython(python: string): string {
  const r = run([python, "-c", "import sys; print(sys.executable); print('%d.%d' % sys.version_info[:2])"]);
  if (!r.ok) throw new Error(`EXECUTOR_PYTHON ${JSON.stringify(python)} cannot be run: ${r.out}`);
  const [path, version] = r.out.split("\n");
  const [major, minor] = (version ?? "0.0").split(".").map(Number);
  if (major !== 3 || (minor ?? 0) < 10) throw new Error(`EXECUTOR_PYTHON ${python} is Python ${version}; 3.10 or newer is required`);
  return path || python;
}
