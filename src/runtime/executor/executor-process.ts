import { chownSync, mkdirSync, readFileSync } from "node:fs";
import type { Logger } from "../../common/logging/logger";
import { forEachLine } from "../../common/streams/for-each-line";
import type { Isolation } from "./isolation";

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
  /** The executor's own scratch folder (its working directory); made here. */
  readonly scratchDir: string;
  /** The PYTHONPATH: the blockx_executor package, readable by EXECUTOR_USER. */
  readonly pythonPath: string;
  /** The secret the executor proves itself with in its Hello. */
  readonly token: string;
  readonly nprocLimit: number;
  /** µs the executor polls its socket before blocking in recv (0: it blocks at once). */
  readonly hotSpinUs: number;
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
  private readonly proc: ReturnType<typeof Bun.spawn>;
  private readonly ownProcessGroup: boolean;
  /** Its stderr lines until it connected (the last START_STDERR_LINES). */
  readonly startStderr: string[] = [];
  private connected = false;
  /** Resolves when its stderr has been read to the end. */
  readonly stderrDone: Promise<void>;
  /** Set once the process has exited. */
  exit: ExecutorExit | null = null;

  /** spawn starts the process; `onExit` is called once, when it has exited. */
  constructor(spec: ExecutorSpawnSpec, log: Logger, onExit: (exit: ExecutorExit) => void) {
    this.id = spec.id;
    this.ownProcessGroup = spec.isolation.ownProcessGroup;
    const runAs = spec.isolation.runAs;
    mkdirSync(spec.scratchDir, { recursive: true, mode: 0o700 });
    if (runAs) chownSync(spec.scratchDir, runAs.uid, runAs.gid);
    this.proc = Bun.spawn([...spec.isolation.argvPrefix, spec.python, "-m", "blockx_executor", "--socket", spec.socketPath, "--id", spec.id], {
      cwd: spec.scratchDir,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        PYTHONPATH: spec.pythonPath,
        PYTHONDONTWRITEBYTECODE: "1",
        PYTHONUNBUFFERED: "1",
        PYTHONHASHSEED: "0",
        BLOCKX_EXECUTOR_TOKEN: spec.token,
        BLOCKX_EXECUTOR_NPROC_LIMIT: String(spec.nprocLimit),
        BLOCKX_EXECUTOR_SCRATCH_DIR: spec.scratchDir,
        BLOCKX_EXECUTOR_HOT_SPIN_US: String(spec.hotSpinUs),
        ...(process.env.BLOCKX_EXECUTOR_ALLOW_NETWORK === "1" ? { BLOCKX_EXECUTOR_ALLOW_NETWORK: "1" } : {}),
      },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const id = spec.id;
    // Executors write nothing on stdout (user output is captured per call); stderr carries warnings.
    void forEachLine(this.proc.stdout as ReadableStream<Uint8Array>, (line) => log.warn({ component: "executor", executorId: id, stream: "stdout" }, line));
    this.stderrDone = forEachLine(this.proc.stderr as ReadableStream<Uint8Array>, (line) => {
      if (!this.connected) {
        this.startStderr.push(line);
        if (this.startStderr.length > START_STDERR_LINES) this.startStderr.shift();
      }
      log.warn({ component: "executor", executorId: id, stream: "stderr" }, line);
    }).catch(() => {});
    const proc = this.proc;
    void proc.exited.then((code) => {
      this.exit = { code, signal: proc.signalCode === null ? null : String(proc.signalCode) };
      onExit(this.exit);
    });
  }

  get pid(): number {
    return this.proc.pid;
  }

  /** exited resolves when the process has exited. */
  get exited(): Promise<number> {
    return this.proc.exited;
  }

  /** markConnected: it said Hello; its stderr from now on is no longer start-up output. */
  markConnected(): void {
    this.connected = true;
  }

  /** kill sends SIGKILL to the whole process group when it has one: anything it forked dies with it. */
  kill(): void {
    try {
      if (this.ownProcessGroup) process.kill(-this.proc.pid, "SIGKILL");
      else this.proc.kill("SIGKILL");
    } catch {
      // already gone
    }
  }

  /** rssBytes is the process's resident memory (from /proc), or null when it cannot be read. */
  rssBytes(): number | null {
    try {
      return Number(readFileSync(`/proc/${this.proc.pid}/statm`, "utf8").split(" ")[1]) * PAGE_SIZE;
    } catch {
      return null;
    }
  }
}
