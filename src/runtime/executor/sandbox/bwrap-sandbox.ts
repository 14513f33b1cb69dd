import { closeSync, lstatSync, openSync, readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Identity } from "../path-access";
import { ancestors, type PythonRuntime } from "./python-runtime";
import { hostSeccompArch, processFilterBytes, socketFilterBytes } from "./seccomp-filter";

/** Where an executor finds its scratch folder inside the sandbox (its working directory). */
export const SANDBOX_SCRATCH_DIR = "/scratch";
/** The size of the sandbox's private /tmp (memory-backed; counted in the executor's memory). */
const TMP_SIZE_BYTES = 64 * 1024 * 1024;
/** The child's file descriptor carrying the seccomp program (stdin, stdout, stderr come first). */
export const SECCOMP_CHILD_FD = 3;

/** SandboxMounts: what one executor's sandbox shows besides the Python runtime. */
export interface SandboxMounts {
  /** The folder holding the blockx_executor package (read-only, same path inside). */
  readonly packageDir: string;
  /** The pool's Unix socket (the only socket file shown, same path inside). */
  readonly socketPath: string;
  /** This executor's own scratch folder on the host (the unsandboxed working folder; unused inside). */
  readonly scratchDir: string;
  /**
   * The size of the executor's scratch (a tmpfs at SANDBOX_SCRATCH_DIR, its own, gone with it):
   * writes past it fail with ENOSPC. Its pages are memory no process's RSS shows, so the pool
   * counts what the executor's scratch and /tmp hold against its memory limit too.
   */
  readonly scratchBytes: number;
}

/**
 * BwrapSandbox builds the bubblewrap command line that starts one executor in its own user
 * (when not root), PID, network, IPC, UTS and mount namespaces, seeing only: the Python runtime
 * and the executor package (read-only), the pool's socket, its own scratch folder, a private
 * /tmp, a fresh /proc (its own processes only) and a minimal /dev. No /etc (so no
 * /etc/blockx), no table store, no other executor, no Worker. bwrap's seccomp filter
 * (seccomp-filter.ts) denies sockets other than Unix ones; the executor then installs a second
 * one on itself that denies exec and fork (processFilterHex).
 *
 * As root, bwrap needs no user namespace; it starts the executor through setpriv, which drops to
 * EXECUTOR_USER with no capabilities and no-new-privileges inside the sandbox (the Python
 * runtime may live where that user cannot reach it on the host, e.g. pyenv under /root: bwrap
 * mounts it as root and the sandbox's own folders above it are open). Not root, bwrap makes a
 * user namespace and the executor keeps this user's uid, with every capability dropped.
 */
export class BwrapSandbox {
  private constructor(
    readonly bwrap: string,
    private readonly runtime: PythonRuntime,
    /** As root: the user executors drop to inside the sandbox, and setpriv's path; null when not root. */
    private readonly drop: { readonly user: Identity; readonly setpriv: string } | null,
    /** The seccomp program's file (written once per pool, read through an fd per executor). */
    private readonly seccompFile: string,
    /** The second program, which the executor installs on itself (no exec, no fork), in hex for its environment. */
    readonly processFilterHex: string,
  ) {}

  /**
   * create writes the seccomp program into `runtimeDir` and returns the sandbox, or throws when
   * this architecture has no filter.
   */
  static create(bwrap: string, runtime: PythonRuntime, drop: { user: Identity; setpriv: string } | null, runtimeDir: string): BwrapSandbox {
    const arch = hostSeccompArch();
    if (!arch) throw new Error(`no seccomp filter for architecture ${process.arch}`);
    const seccompFile = join(runtimeDir, "seccomp.bpf");
    writeFileSync(seccompFile, socketFilterBytes(arch), { mode: 0o600 });
    return new BwrapSandbox(bwrap, runtime, drop, seccompFile, Buffer.from(processFilterBytes(arch)).toString("hex"));
  }

  /** openSeccomp opens the filter for one spawn; the caller passes it as the child's fd 3 and closes it after. */
  openSeccomp(): number {
    return openSync(this.seccompFile, "r");
  }

  static closeSeccomp(fd: number): void {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  }

  /** argv is the command line starting `command` (the interpreter and its arguments) in the sandbox. */
  argv(mounts: SandboxMounts, command: readonly string[]): string[] {
    const a: string[] = [this.bwrap];
    // As root, setpriv drops every capability after changing user (it needs CAP_SETUID to do so).
    if (!this.drop) a.push("--unshare-user", "--disable-userns", "--cap-drop", "ALL");
    a.push("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try");
    a.push("--die-with-parent", "--new-session");
    a.push("--hostname", "executor");
    // First the mounts others may be placed under (the package and the socket often live in /tmp).
    a.push("--proc", "/proc", "--dev", "/dev");
    a.push("--perms", "1777", "--size", String(TMP_SIZE_BYTES), "--tmpfs", "/tmp");
    const made = new Set<string>(["/tmp"]);
    const dirsAbove = (path: string) => {
      // bwrap makes missing folders mode 0700 as root: open them so EXECUTOR_USER passes through.
      for (const d of ancestors(path)) {
        if (made.has(d)) continue;
        made.add(d);
        a.push("--perms", "0755", "--dir", d);
      }
    };
    const shown = [...this.runtime.paths, ...(this.drop ? [this.drop.setpriv] : [])];
    for (const p of shown) {
      dirsAbove(p);
      if (lstatSync(p).isSymbolicLink()) a.push("--symlink", readlinkSync(p), p);
      else a.push("--ro-bind", p, p);
      made.add(p);
    }
    dirsAbove(mounts.packageDir);
    a.push("--ro-bind", mounts.packageDir, mounts.packageDir);
    dirsAbove(mounts.socketPath);
    a.push("--bind", mounts.socketPath, mounts.socketPath);
    // Scratch is a tmpfs of its own, bounded: a bind of a host folder (on /run under systemd, a
    // host-wide tmpfs) let one function fill it for every service on the host.
    a.push("--perms", "1777", "--size", String(Math.max(1 << 20, Math.trunc(mounts.scratchBytes))), "--tmpfs", SANDBOX_SCRATCH_DIR, "--chdir", SANDBOX_SCRATCH_DIR);
    a.push("--seccomp", String(SECCOMP_CHILD_FD));
    a.push("--");
    if (this.drop) {
      const { uid, gid } = this.drop.user;
      a.push(this.drop.setpriv, `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--");
    }
    a.push(...command);
    return a;
  }
}
