import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { forEachLine } from "../../src/common/streams/for-each-line";
import { binaryDigest, sourceDigest } from "./source-digest";
import { roleOfCommand, suiteEnv, type SuiteRole } from "./suite-tls";

const REPO = join(import.meta.dir, "..", "..");
/**
 * The binary under test: dist/blockx, or, for a benchmark comparing two builds (bench/worker/
 * compare-builds.sh), the one BLOCKX_BENCH_BINARY names. Tests never set it.
 */
const BENCH_BINARY = process.env.BLOCKX_BENCH_BINARY;
export const BLOCKX_BINARY = BENCH_BINARY ?? join(REPO, "dist", "blockx");

// A process test of a binary built from other sources tests nothing of this tree: refuse it.
if (BENCH_BINARY === undefined) {
  const built = binaryDigest(BLOCKX_BINARY);
  const tree = sourceDigest(REPO);
  if (built !== tree) {
    throw new Error(`dist/blockx was built from other sources (digest ${built}; the tree's is ${tree}): run \`make build\` (make test does)`);
  }
}

export interface LogLine {
  level: string;
  msg: string;
  [key: string]: unknown;
}

/**
 * BlockxProcess runs the compiled binary the way an operator would: from an empty temporary
 * directory (no checkout, no node_modules), configured by environment variables, dying with
 * the test process (setpriv --pdeathsig). stdout is parsed as JSON log lines. Its TMPDIR (unless
 * the test sets one) is a folder inside that directory, as a systemd unit's RuntimeDirectory is:
 * what a process killed with SIGKILL leaves there (its executor pool's socket folder) goes with
 * the directory at stop(), instead of piling up in /tmp run after run.
 */
export class BlockxProcess {
  /** Spawned and not yet stopped: what reapUnstopped ends at the run's end (test/support/preload.ts). */
  private static readonly unstopped = new Set<BlockxProcess>();
  readonly lines: LogLine[] = [];
  stderr = "";
  private readonly waiters = new Set<() => void>();
  readonly exited: Promise<number>;

  private constructor(
    readonly proc: ReturnType<typeof Bun.spawn>,
    readonly cwd: string,
  ) {
    this.exited = proc.exited;
    void this.pump(proc.stdout as ReadableStream<Uint8Array>, (line) => {
      try {
        this.lines.push(JSON.parse(line) as LogLine);
      } catch {
        this.lines.push({ level: "raw", msg: line });
      }
    });
    void this.pump(proc.stderr as ReadableStream<Uint8Array>, (line) => {
      this.stderr += line + "\n";
    });
  }

  /**
   * spawn runs dist/blockx, or `binary` (an installed copy of it, as the upgrade test runs).
   * `ownSession`: the process runs in a session (and process group) of its own, as on a host of its
   * own. A test that SIGSTOPs it wants that: a stopped process sharing the test run's process group
   * is sent SIGHUP, and dies of it, when that group is orphaned (the run started in the background).
   */
  static spawn(args: readonly string[], env: Record<string, string>, binary = BLOCKX_BINARY, o: { ownSession?: boolean } = {}): BlockxProcess {
    if (!existsSync(binary)) throw new Error(`${binary} is missing: run make build first`);
    const cwd = mkdtempSync(join(tmpdir(), "blockx-proc-"));
    // Passable (not readable) by the executors' user, who connects to the pool's socket in it.
    const tmp = join(cwd, "tmp");
    mkdirSync(tmp, { mode: 0o711 });
    chmodSync(cwd, 0o711);
    // setsid does not fork (the spawned process leads no group), so the pid stays blockx's and pdeathsig holds.
    const proc = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", ...(o.ownSession ? ["setsid"] : []), binary, ...args], {
      cwd,
      // `blockx dev` chooses for its children and its client (secure unless told otherwise).
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", TMPDIR: tmp, ...(args[0] === "dev" ? {} : transportEnv(env, roleOfCommand(args[0]))), ...localTestChainEnv(args[0]), ...env },
      stdout: "pipe",
      stderr: "pipe",
    });
    const p = new BlockxProcess(proc, cwd);
    BlockxProcess.unstopped.add(p);
    return p;
  }

  /**
   * reapUnstopped stops (SIGKILL) every process no test stopped, and removes their folders: a test
   * that expects a process to exit on its own (a bad configuration, a fatal fault) never calls
   * stop(), and its folder was left in /tmp (16 of them a make test run).
   */
  static async reapUnstopped(): Promise<void> {
    await Promise.all([...BlockxProcess.unstopped].map((p) => p.stop("SIGKILL")));
  }

  private async pump(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
    await forEachLine(stream, (line) => {
      onLine(line);
      for (const w of this.waiters) w();
    });
    for (const w of this.waiters) w();
  }

  /** waitForLog resolves with the first log line matching `pred`, or rejects after timeoutMs or on exit. */
  async waitForLog(pred: (l: LogLine) => boolean, timeoutMs = 20_000): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    let exited = false;
    void this.exited.then(() => (exited = true));
    for (;;) {
      const hit = this.lines.find(pred);
      if (hit) return hit;
      if (exited) throw new Error(`process exited (${this.proc.exitCode}) before the expected log line; stderr:\n${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for a log line; last lines:\n${this.tail()}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 50);
        this.waiters.add(() => {
          clearTimeout(t);
          resolve();
        });
      });
      this.waiters.clear();
    }
  }

  /** listenAddr waits for the "grpc listening" line and returns the bound address. */
  async grpcAddr(timeoutMs?: number): Promise<string> {
    const line = await this.waitForLog((l) => l.msg === "grpc listening", timeoutMs);
    return String(line.addr).replace(/^0\.0\.0\.0:/, "127.0.0.1:");
  }

  /** dashboardUrl waits for `blockx ui`'s "blockx ui: URL" line on stderr and returns the URL (with its token). */
  async dashboardUrl(): Promise<string> {
    for (;;) {
      const m = /^blockx ui: (http:\/\/\S+)$/m.exec(this.stderr);
      if (m) return m[1]!;
      if (this.proc.exitCode !== null) throw new Error(`blockx ui exited ${this.proc.exitCode}: ${this.stderr}`);
      await Bun.sleep(50);
    }
  }

  tail(n = 20): string {
    return this.lines
      .slice(-n)
      .map((l) => JSON.stringify(l))
      .join("\n");
  }

  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<number> {
    if (this.proc.exitCode === null) this.proc.kill(signal);
    const code = await this.exited;
    rmSync(this.cwd, { recursive: true, force: true });
    BlockxProcess.unstopped.delete(this);
    return code;
  }
}

/**
 * localTestChainEnv: the suite's Workers and Sync Invokers serve the synthetic chain (most tests
 * read it), which production roles leave off unless configured: it is set here, explicitly, for
 * each. A test of the off case sets LOCALTESTSERVICE_ENABLED=false in its env (which wins).
 */
export function localTestChainEnv(command: string | undefined): Record<string, string> {
  return command === "worker" || command === "bundle-worker" || command === "syncinvoker" ? { LOCALTESTSERVICE_ENABLED: "true" } : {};
}

/**
 * transportEnv: for a process whose env chooses no transport, the suite certificate of `role`
 * (mTLS is the suite's default; a test about plaintext sets BLOCKX_INSECURE=1).
 */
export function transportEnv(env: Readonly<Record<string, string | undefined>>, role: SuiteRole): Record<string, string> {
  return "BLOCKX_TLS_CERT_FILE" in env || "BLOCKX_TLS_CA_FILE" in env || "BLOCKX_TLS_KEY_FILE" in env || "BLOCKX_INSECURE" in env ? {} : suiteEnv(role);
}
