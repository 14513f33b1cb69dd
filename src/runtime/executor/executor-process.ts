import { procChildren } from "./proc-children";
import { chownSync, mkdirSync, readFileSync, readlinkSync, rmSync, statfsSync } from "node:fs";
import type { Logger } from "../../common/logging/logger";
import { forEachLine } from "../../common/streams/for-each-line";
import type { Isolation } from "./isolation";
import { STDERR_LINES_PER_SECOND, STDERR_MAX_LINE_CHARS, StderrGate } from "./stderr-gate";
import { BwrapSandbox, SANDBOX_SCRATCH_DIR } from "./sandbox/bwrap-sandbox";

const PAGE_SIZE = 4096;
/** Lines of an executor's stderr kept for a failed start. */
const START_STDERR_LINES = 40;

/** ExecutorSpawnSpec is everything one executor process is started with. */
export interface ExecutorSpawnSpec {
  /** The executor id, `${slot}.${generation}`: passed to the executor, which says it in its Hello. */
  readonly id: string;
  readonly python: string;
  readonly isolation: Isolation;
  /** The pool's Unix socket the executor connects to. */
  readonly socketPath: string;
  /** The executor's own scratch folder (its working directory); made here, wiped when it exits. */
  readonly scratchDir: string;
  /** The sandbox's scratch size (SandboxMounts.scratchBytes). */
  readonly scratchBytes: number;
  /** The sandbox it starts in (EXECUTOR_SANDBOX=on), or null. */
  readonly sandbox: BwrapSandbox | null;
  /** The PYTHONPATH: the blockx_executor package, readable by EXECUTOR_USER. */
  readonly pythonPath: string;
  /** The secret the executor proves itself with in its Hello: its own, used once, given on stdin (never in its environment). */
  readonly token: string;
  readonly nprocLimit: number;
  /** µs the executor polls its socket before blocking in recv (0: it blocks at once). */
  readonly hotSpinUs: number;
  /** The block store's open file (read-only), passed to the executor as an inherited fd; null: none. */
  readonly blockStoreFd: number | null;
}

/** ExecutorExit: how the process ended (signal set when a signal ended it). */
export interface ExecutorExit {
  readonly code: number | null;
  readonly signal: string | null;
}

/**
 * ExecutorProcess is one spawned Python executor process (`python -m blockx_executor`), from spawn
 * to exit: its environment, its stdout and stderr forwarded to the log, the last stderr lines it
 * wrote before it connected (why an executor dies at start), its exit, its memory use, and killing
 * it with everything it forked. It knows nothing of sockets or calls: the pool talks to it through
 * an ExecutorConnection.
 */
export class ExecutorProcess {
  readonly id: string;
  /** null when it could not be spawned (spawnError says why). */
  private readonly proc: ReturnType<typeof Bun.spawn> | null = null;
  /**
   * Why the process could not be started at all (`EMFILE: too many open files`, EAGAIN, ENOSPC
   * making its scratch folder), or null. Such an executor "exits" at once, asynchronously, like one
   * that died at start: the pool restarts it after its backoff, and the host's shortage never
   * becomes an exception thrown inside the pool's timer (which ended the Worker).
   */
  readonly spawnError: string | null = null;
  private readonly ownProcessGroup: boolean;
  /** Runs in the sandbox (its scratch and /tmp are tmpfs whose files count as its memory). */
  private readonly sandboxed: boolean;
  /** Its stderr lines until it connected (the last START_STDERR_LINES). */
  readonly startStderr: string[] = [];
  private connected = false;
  /** The pool shut down and killed it: what it says from then on (a Hello into a closed socket) is not news. */
  private retired = false;
  /** Resolves when its stderr has been read to the end. */
  readonly stderrDone: Promise<void>;
  /** Set once the process has exited. */
  exit: ExecutorExit | null = null;

  /** spawn starts the process; `onExit` is called once, when it has exited. */
  /**
   * `callsHeld` names the calls the executor runs when a line comes (their ids start with the task
   * id), so that an executor's own stderr can be joined with the Worker's lines about those tasks.
   */
  constructor(spec: ExecutorSpawnSpec, log: Logger, onExit: (exit: ExecutorExit) => void, callsHeld: () => CallsHeld = () => ({})) {
    this.id = spec.id;
    this.ownProcessGroup = spec.isolation.ownProcessGroup;
    this.sandboxed = spec.sandbox !== null;
    try {
      this.proc = this.start(spec);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      this.spawnError = `${err.code ?? err.name}: ${err.message.replace(/^[A-Z]+: /, "")}`;
      this.startStderr.push(`the executor could not be started: ${this.spawnError}`);
      this.stderrDone = Promise.resolve();
      const exit = { code: null, signal: null };
      rmSync(spec.scratchDir, { recursive: true, force: true });
      // Later, as a real exit comes: the pool has recorded this executor by then.
      queueMicrotask(() => {
        this.exit = exit;
        onExit(exit);
      });
      return;
    }
    this.stderrDone = this.follow(spec, this.proc, log, onExit, callsHeld);
  }

  /** start makes the scratch folder and spawns the process; it throws what the host refused (EMFILE, EAGAIN, ENOSPC). */
  private start(spec: ExecutorSpawnSpec): ReturnType<typeof Bun.spawn> {
    const runAs = spec.isolation.runAs;
    mkdirSync(spec.scratchDir, { recursive: true, mode: 0o700 });
    if (runAs) chownSync(spec.scratchDir, runAs.uid, runAs.gid);
    const command = [spec.python, "-m", "blockx_executor", "--socket", spec.socketPath, "--id", spec.id];
    const sandbox = spec.sandbox;
    const seccompFd = sandbox?.openSeccomp() ?? null;
    const argv = sandbox ? sandbox.argv({ packageDir: spec.pythonPath, socketPath: spec.socketPath, scratchDir: spec.scratchDir, scratchBytes: spec.scratchBytes }, command) : command;
    // The child's fds past stdio: the seccomp program at 3 (bwrap reads and closes it), then the
    // block store, which the executor keeps (bwrap and setpriv leave inherited fds open).
    const extraFds: number[] = seccompFd !== null ? [seccompFd] : [];
    let blockStoreChildFd: number | null = null;
    if (spec.blockStoreFd !== null) {
      blockStoreChildFd = 3 + extraFds.length;
      extraFds.push(spec.blockStoreFd);
    }
    let proc: ReturnType<typeof Bun.spawn>;
    try {
      proc = Bun.spawn([...spec.isolation.argvPrefix, ...argv], {
        cwd: spec.scratchDir,
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          PYTHONPATH: spec.pythonPath,
          PYTHONDONTWRITEBYTECODE: "1",
          PYTHONUNBUFFERED: "1",
          PYTHONHASHSEED: "0",
          BLOCKX_EXECUTOR_TOKEN_ON_STDIN: "1",
          BLOCKX_EXECUTOR_NPROC_LIMIT: String(spec.nprocLimit),
          BLOCKX_EXECUTOR_SCRATCH_DIR: sandbox ? SANDBOX_SCRATCH_DIR : spec.scratchDir,
          BLOCKX_EXECUTOR_HOT_SPIN_US: String(spec.hotSpinUs),
          ...(sandbox ? { BLOCKX_EXECUTOR_PROCESS_FILTER: sandbox.processFilterHex } : {}),
          ...(blockStoreChildFd !== null ? { BLOCKX_EXECUTOR_BLOCK_STORE_FD: String(blockStoreChildFd) } : {}),
          ...(process.env.BLOCKX_EXECUTOR_ALLOW_NETWORK === "1" ? { BLOCKX_EXECUTOR_ALLOW_NETWORK: "1" } : {}),
        },
        // The seccomp program is the child's fd 3 (SECCOMP_CHILD_FD), which bwrap reads and closes.
        stdio: ["pipe", "pipe", "pipe", ...extraFds],
      });
    } finally {
      if (seccompFd !== null) BwrapSandbox.closeSeccomp(seccompFd);
    }
    const stdin = proc.stdin as import("bun").FileSink;
    stdin.write(`${spec.token}\n`);
    void Promise.resolve(stdin.end()).catch(() => {});
    return proc;
  }

  /** follow forwards the process's output to the log and reports its exit; resolves when its stderr ends. */
  private follow(spec: ExecutorSpawnSpec, proc: ReturnType<typeof Bun.spawn>, log: Logger, onExit: (exit: ExecutorExit) => void, callsHeld: () => CallsHeld): Promise<void> {
    const id = spec.id;
    // Executors write nothing on stdout (user output is captured per call); stderr carries
    // warnings, and whatever user code writes past the capture: bounded in length and rate.
    const gate = new StderrGate();
    const tellDropped = () => {
      const untold = gate.untold();
      if (untold > 0) log.warn({ component: "executor", executorId: id, droppedLines: untold, ...callsHeld() }, `dropped ${untold} more lines of this executor's output (over ${STDERR_LINES_PER_SECOND} a second)`);
    };
    // Lines dropped in a burst that then stops are told when their second is over, not only with
    // the next line let through (which may never come) or at the executor's exit.
    let tellTimer: ReturnType<typeof setTimeout> | null = null;
    const logLine = (stream: "stdout" | "stderr") => (line: string, cut: boolean) => {
      if (stream === "stderr" && !this.connected) {
        this.startStderr.push(line);
        if (this.startStderr.length > START_STDERR_LINES) this.startStderr.shift();
      }
      const now = Date.now();
      const { log: pass, droppedBefore } = gate.admit(now);
      if (!pass) {
        if (tellTimer === null) {
          tellTimer = setTimeout(() => {
            tellTimer = null;
            tellDropped();
          }, 1000 - (now % 1000) + 50);
          tellTimer.unref?.();
        }
        return;
      }
      const fields = { component: "executor", executorId: id, stream, ...callsHeld(), ...(cut ? { cut: true } : {}), ...(droppedBefore > 0 ? { droppedLinesBefore: droppedBefore } : {}) };
      if (this.retired) log.debug(fields, line);
      else log.warn(fields, line);
    };
    void forEachLine(proc.stdout as ReadableStream<Uint8Array>, logLine("stdout"), STDERR_MAX_LINE_CHARS);
    const stderrDone = forEachLine(proc.stderr as ReadableStream<Uint8Array>, logLine("stderr"), STDERR_MAX_LINE_CHARS)
      .then(() => {
        if (tellTimer) clearTimeout(tellTimer);
        tellTimer = null;
        tellDropped();
      })
      .catch(() => {});
    void proc.exited.then((code) => {
      this.exit = { code, signal: proc.signalCode === null ? null : String(proc.signalCode) };
      // Its scratch folder dies with it: nothing one executor wrote is seen by the next.
      rmSync(spec.scratchDir, { recursive: true, force: true });
      onExit(this.exit);
    });
    return stderrDone;
  }

  /** pid: the process's, or -1 when it could not be spawned. */
  get pid(): number {
    return this.proc?.pid ?? -1;
  }

  /**
   * interpreterPid is the Python interpreter's pid on this host: the process itself, or, in the
   * sandbox, the last of bwrap's line of first children (bwrap, its init, the interpreter).
   */
  interpreterPid(): number {
    if (!this.proc) return -1;
    let pid = this.proc.pid;
    for (let depth = 0; depth < 4; depth++) {
      const children = procChildren.childrenOf(pid);
      if (children.length === 0) break;
      pid = children[0]!;
    }
    return pid;
  }

  /** exited resolves when the process has exited. */
  get exited(): Promise<number> {
    return this.proc?.exited ?? Promise.resolve(-1);
  }

  /** markConnected: it said Hello; its stderr from now on is no longer start-up output. */
  markConnected(): void {
    this.connected = true;
  }

  /** retire: the pool is shutting down; its output from now on is logged at debug, not as a warning. */
  retire(): void {
    this.retired = true;
  }

  /** kill sends SIGKILL to the whole process group when it has one: anything it forked dies with it. */
  kill(): void {
    if (!this.proc) return;
    try {
      if (this.ownProcessGroup) process.kill(-this.proc.pid, "SIGKILL");
      else this.proc.kill("SIGKILL");
    } catch {
      // already gone
    }
  }

  /**
   * rssBytes is the resident memory of the executor and everything under it (bwrap, its init,
   * the interpreter, anything it forked), from /proc, or null when it cannot be read.
   */
  /**
   * memoryBytes: what the executor holds in memory: its tree's resident memory and, in the
   * sandbox, the files in its scratch and /tmp (tmpfs pages no RSS shows), read through the
   * interpreter's root (/proc/PID/root; 0 where that cannot be read). Null when the process is gone.
   */
  memoryBytes(): number | null {
    const rss = this.rssBytes();
    if (rss === null || !this.sandboxed) return rss;
    const pid = this.interpreterPid();
    let files = 0;
    try {
      // Only a process inside its sandbox: until bwrap has made it (or for bwrap itself), /proc/PID/root
      // is this host's root, whose /tmp holds everyone's files, not the executor's.
      if (readlinkSync(`/proc/${pid}/ns/mnt`) === readlinkSync("/proc/self/ns/mnt")) return rss;
      for (const dir of [SANDBOX_SCRATCH_DIR, "/tmp"]) {
        const s = statfsSync(`/proc/${pid}/root${dir}`);
        if (s.type === TMPFS_MAGIC) files += (s.blocks - s.bfree) * s.bsize;
      }
    } catch {
      // not readable from here (or gone): the tmpfs's own size still bounds its files
    }
    return rss + files;
  }

  rssBytes(): number | null {
    const pids = this.treePids();
    if (pids === null) return null;
    let total = 0;
    for (const pid of pids) {
      try {
        total += Number(readFileSync(`/proc/${pid}/statm`, "utf8").split(" ")[1]) * PAGE_SIZE;
      } catch {
        if (pid === this.proc!.pid) return null;
      }
    }
    return total;
  }

  /** treePids: the executor's process and everything under it (bwrap, its init, the interpreter, what it forked); null when it is gone. */
  treePids(): number[] | null {
    if (!this.proc || this.exit !== null) return null;
    const out: number[] = [];
    const pending = [this.proc.pid];
    while (pending.length > 0 && out.length < MAX_TREE_PROCESSES) {
      const pid = pending.pop()!;
      out.push(pid);
      pending.push(...procChildren.childrenOf(pid));
    }
    return out;
  }
}

/** CallsHeld: log fields naming an executor's calls (none when it holds none). */
export interface CallsHeld {
  /** At most MAX_LOGGED_CALL_IDS ids. */
  readonly callIds?: readonly string[];
  /** How many more the executor held. */
  readonly moreCalls?: number;
}

/** Call ids named on one log line at most: a line must stay a line, even with 512 calls in flight. */
export const MAX_LOGGED_CALL_IDS = 32;

/** callsHeldFields: the log fields for these call ids, bounded. */
export function callsHeldFields(callIds: readonly string[]): CallsHeld {
  if (callIds.length === 0) return {};
  if (callIds.length <= MAX_LOGGED_CALL_IDS) return { callIds };
  return { callIds: callIds.slice(0, MAX_LOGGED_CALL_IDS), moreCalls: callIds.length - MAX_LOGGED_CALL_IDS };
}

/** statfs's f_type of a tmpfs (linux/magic.h): only the sandbox's own tmpfs mounts count as an executor's memory. */
const TMPFS_MAGIC = 0x01021994;

/** How many processes of an executor's tree rssBytes reads at most (a fork bomb's are bounded by RLIMIT_NPROC anyway). */
const MAX_TREE_PROCESSES = 64;
