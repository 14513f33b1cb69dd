import { createHash, randomBytes } from "node:crypto";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Socket, UnixSocketListener } from "bun";
import type { Logger } from "../../common/logging/logger";
import { forEachLine } from "../../common/streams/for-each-line";
import { CallErrorCode, isRetryable, type CallFailure, type CallOutcome, type CallOwner, type CallRequest } from "../calls/call";
import { executorPythonPath } from "./executor-assets";
import { ExecutorStartError } from "./executor-start-error";
import { likelyStartCause } from "./start-failure";
import { blockingFolder, describeBlock } from "./path-access";
import { ExecutorPoolCore } from "./executor-pool-core";
import type { ExecutorPoolConfig } from "./executor-pool-config";
import { encodeFrame, FrameDecoder } from "./frame-codec";
import { resolveIsolation, resolvePython, type Isolation } from "./isolation";
import { PROTOCOL_VERSION, RawJson, type ExecutorMessage, type JsonValue, type LogLine, type PoolMessage, type ResumeResult, type SuspensionRequest } from "./protocol";

/** How often the pool checks pings, memory, wall-clock ceilings and restarts. */
const TICK_MS = 50;
const PAGE_SIZE = 4096;

type CallResult = { ok: true; value: JsonValue } | { ok: false; error: CallFailure };

interface Conn {
  socket: Socket<unknown>;
  decoder: FrameDecoder;
  /** Frames waiting for the socket to drain. */
  backlog: Uint8Array[];
  /** Frames written in this tick, flushed together. */
  corked: Uint8Array[];
  index: number | null;
}

interface Executor {
  readonly index: number;
  readonly id: string;
  readonly proc: ReturnType<typeof Bun.spawn>;
  conn: Conn | null;
  /** Why the pool killed it, when it did: decides how its calls fail. */
  killReason: { code: CallErrorCode; message: string; offendingCallId?: string } | null;
  dead: boolean;
  /** Its stderr lines before Hello (the last ones): why an executor dies at start. */
  readonly startStderr: string[];
  /** Resolves when its stderr has been read to the end. */
  stderrDone: Promise<void>;
  exit: { code: number | null; signal: string | null } | null;
}

/** Lines of an executor's stderr kept for a failed start. */
const START_STDERR_LINES = 40;

interface ActiveCall {
  readonly req: CallRequest;
  readonly owner: CallOwner;
  readonly resolve: (o: CallOutcome) => void;
  readonly digest: string;
  readonly createdMs: number;
  executor: Executor | null;
  /** When the executor last got ExecuteCall/ResumeCall; null while suspended or queued. */
  runningSinceMs: number | null;
  firstSentMs: number | null;
  ioMs: number;
  cpuMs: number;
  suspensions: number;
  cancelled: string | null;
}

export interface ExecutorPoolStats {
  readonly executors: { id: string; state: string; pid: number | null; inflight: number }[];
  readonly queued: number;
  readonly restarts: number;
}

/**
 * ExecutorPool runs calls in EXECUTOR_COUNT Python executor processes (executor-py) over one
 * Unix socket. A call goes to the least-loaded live executor; its suspensions (IO requests,
 * sub-calls) are served by the CallOwner's callbacks and resumed. A dead executor fails its
 * in-flight calls as retryable and is restarted with backoff; one that stops answering pings
 * is killed as hung; one over its memory limit is killed (OOM_KILLED); a call running past the
 * wall-clock ceiling kills its executor and fails with WALL_CLOCK_EXCEEDED.
 *
 * execute() never throws: every failure is a CallOutcome with a classified error.
 */
/** Frames of one tick up to this size are joined into one write. */
const COALESCE_MAX_BYTES = 64 * 1024;

export class ExecutorPool {
  private readonly core: ExecutorPoolCore;
  private readonly executors: (Executor | null)[];
  private readonly calls = new Map<string, ActiveCall>();
  private readonly queue: ActiveCall[] = [];
  private readonly token = randomBytes(16).toString("hex");
  private readonly runtimeDir: string;
  private readonly socketPath: string;
  private listener: UnixSocketListener<unknown> | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private closed = false;
  private restarts = 0;
  private pingSeq = 0;
  private readonly python: string;
  readonly isolation: Isolation;
  private readonly readyWaiters: (() => void)[] = [];

  private constructor(
    private readonly config: ExecutorPoolConfig,
    private readonly log: Logger,
    /** The PYTHONPATH of executors: the blockx_executor package, readable by EXECUTOR_USER. */
    readonly pythonPath: string,
    python: string,
    isolation: Isolation,
  ) {
    this.core = new ExecutorPoolCore(config.executorCount, {
      pingIntervalMs: config.pingIntervalMs,
      pingTimeoutMs: config.pingTimeoutMs,
      startTimeoutMs: Math.max(config.pingTimeoutMs, 15_000),
      backoffBaseMs: 100,
      backoffMaxMs: 10_000,
      healthyAfterMs: 30_000,
      maxInflightPerExecutor: 512,
    });
    this.executors = Array.from({ length: config.executorCount }, () => null);
    this.python = python;
    this.isolation = isolation;
    for (const w of this.isolation.warnings) log.warn({ component: "executor-pool" }, `isolation: ${w}`);
    this.runtimeDir = makeRuntimeDir(isolation);
    this.socketPath = join(this.runtimeDir, "executors.sock");
  }

  /**
   * start spawns every executor and resolves once at least one is ready (all, with waitForAll).
   * It fails with an ExecutorStartError naming the cause: executor code or the socket folder
   * out of EXECUTOR_USER's reach (before anything is spawned), or executors that die before
   * saying Hello (at once, with their own stderr and the likely cause), or the 30 s timeout.
   */
  static async start(config: ExecutorPoolConfig, log: Logger, opts: { waitForAll?: boolean } = {}): Promise<ExecutorPool> {
    const python = resolvePython(config.python);
    const isolation = resolveIsolation(config);
    const pool = new ExecutorPool(config, log, await executorPythonPath(config.cacheDir, isolation.runAs), python, isolation);
    pool.listen();
    const now = Date.now();
    for (let i = 0; i < config.executorCount; i++) pool.spawn(i, now);
    pool.timer = setInterval(() => pool.tick(), TICK_MS);
    try {
      await pool.waitReady(opts.waitForAll ? config.executorCount : 1, 30_000);
    } catch (e) {
      await pool.close();
      throw e;
    }
    return pool;
  }

  /** execute runs one call to its end. */
  execute(req: CallRequest, owner: CallOwner = {}): Promise<CallOutcome> {
    return new Promise((resolve) => {
      const digest = req.fn.digest ?? createHash("sha256").update(req.fn.source).digest("hex");
      const call: ActiveCall = {
        req,
        owner,
        resolve,
        digest,
        createdMs: performance.now(),
        executor: null,
        runningSinceMs: null,
        firstSentMs: null,
        ioMs: 0,
        cpuMs: 0,
        suspensions: 0,
        cancelled: null,
      };
      if (this.closed) return this.finish(call, this.failure(CallErrorCode.PoolClosed, "the executor pool is shut down"));
      if (this.calls.has(req.callId)) {
        return resolve(this.outcome(call, this.failure(CallErrorCode.Internal, `call id ${req.callId} is already running`)));
      }
      this.calls.set(req.callId, call);
      this.dispatch(call);
    });
  }

  /** cancel stops a call wherever it is; it ends with CANCELLED. Unknown ids are ignored. */
  cancel(callId: string, reason = "cancelled"): void {
    const call = this.calls.get(callId);
    if (!call || call.cancelled) return;
    call.cancelled = reason;
    const qi = this.queue.indexOf(call);
    if (qi >= 0) {
      this.queue.splice(qi, 1);
      this.finish(call, this.failure(CallErrorCode.Cancelled, `call cancelled: ${reason}`));
    } else if (call.executor) {
      this.send(call.executor, { type: "CancelCall", callId, reason });
    }
  }

  stats(): ExecutorPoolStats {
    return {
      executors: this.core.slots.map((s) => ({
        id: this.core.executorId(s.index),
        state: s.state,
        pid: this.executors[s.index]?.dead === false ? this.executors[s.index]!.proc.pid : null,
        inflight: s.inflight,
      })),
      queued: this.queue.length,
      restarts: this.restarts,
    };
  }

  /** pids of live executors, by slot (tests kill them). */
  pids(): (number | null)[] {
    return this.executors.map((e) => (e && !e.dead ? e.proc.pid : null));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    for (const call of this.queue.splice(0)) this.finish(call, this.failure(CallErrorCode.PoolClosed, "the executor pool is shut down"));
    const exits: Promise<unknown>[] = [];
    for (const e of this.executors) {
      if (!e) continue;
      this.killExecutor(e, { code: CallErrorCode.PoolClosed, message: "the executor pool is shut down" });
      exits.push(e.proc.exited);
    }
    await Promise.all(exits);
    this.listener?.stop(true);
    rmSync(this.runtimeDir, { recursive: true, force: true });
  }

  // --- executors -------------------------------------------------------------------------

  private listen(): void {
    this.listener = Bun.listen<unknown>({
      unix: this.socketPath,
      socket: {
        open: (socket) => {
          socket.data = { socket, decoder: new FrameDecoder(), backlog: [], corked: [], index: null } satisfies Conn;
        },
        data: (socket, chunk) => this.onData(socket.data as Conn, chunk),
        drain: (socket) => this.flushBacklog(socket.data as Conn),
        close: (socket) => this.onConnClosed(socket.data as Conn),
        error: (socket) => this.onConnClosed(socket.data as Conn),
      },
    });
    const runAs = this.isolation.runAs;
    if (runAs) chownSync(this.socketPath, runAs.uid, runAs.gid);
    chmodSync(this.socketPath, 0o600);
  }

  private spawn(index: number, nowMs: number): void {
    const id = this.core.starting(index, nowMs);
    const scratch = join(this.runtimeDir, `scratch-${index}`);
    mkdirSync(scratch, { recursive: true, mode: 0o700 });
    if (this.isolation.runAs) chownSync(scratch, this.isolation.runAs.uid, this.isolation.runAs.gid);
    const proc = Bun.spawn([...this.isolation.argvPrefix, this.python, "-m", "blockx_executor", "--socket", this.socketPath, "--id", id], {
      cwd: scratch,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        PYTHONPATH: this.pythonPath,
        PYTHONDONTWRITEBYTECODE: "1",
        PYTHONUNBUFFERED: "1",
        PYTHONHASHSEED: "0",
        BLOCKX_EXECUTOR_TOKEN: this.token,
        BLOCKX_EXECUTOR_NPROC_LIMIT: String(this.config.nprocLimit),
        BLOCKX_EXECUTOR_SCRATCH_DIR: scratch,
        ...(process.env.BLOCKX_EXECUTOR_ALLOW_NETWORK === "1" ? { BLOCKX_EXECUTOR_ALLOW_NETWORK: "1" } : {}),
      },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const e: Executor = { index, id, proc, conn: null, killReason: null, dead: false, startStderr: [], stderrDone: Promise.resolve(), exit: null };
    this.executors[index] = e;
    // Executors write nothing on stdout (user output is captured per call); stderr carries warnings.
    void forEachLine(proc.stdout as ReadableStream<Uint8Array>, (line) => this.log.warn({ component: "executor", executorId: id, stream: "stdout" }, line));
    e.stderrDone = forEachLine(proc.stderr as ReadableStream<Uint8Array>, (line) => {
      if (!e.conn) {
        e.startStderr.push(line);
        if (e.startStderr.length > START_STDERR_LINES) e.startStderr.shift();
      }
      this.log.warn({ component: "executor", executorId: id, stream: "stderr" }, line);
    }).catch(() => {});
    void proc.exited.then((code) => {
      e.exit = { code, signal: proc.signalCode === null ? null : String(proc.signalCode) };
      this.onExit(e, code, e.exit.signal);
    });
  }

  private onData(conn: Conn, chunk: Uint8Array): void {
    let messages: unknown[];
    try {
      messages = conn.decoder.push(chunk);
    } catch (err) {
      this.log.error({ component: "executor-pool", err }, "executor sent a malformed frame; closing its connection");
      const e = conn.index === null ? null : this.executors[conn.index];
      if (e) this.killExecutor(e, { code: CallErrorCode.ExecutorCrashed, message: "executor sent a malformed frame" });
      else conn.socket.end();
      return;
    }
    for (const m of messages) this.onMessage(conn, m as ExecutorMessage);
  }

  private onMessage(conn: Conn, m: ExecutorMessage): void {
    if (conn.index === null) {
      // The first frame must be a Hello carrying our token and the id of an executor we started
      // and still count alive. An executor's exit can be seen before the Hello it sent just before
      // dying (found by the soak): accepting it would mark the slot READY with a dead executor,
      // whose restart then never comes and whose calls wait forever.
      const index = m.type === "Hello" ? Number(m.executorId.split(".")[0]) : -1;
      const e = this.executors[index];
      if (m.type !== "Hello" || m.token !== this.token || !e || e.dead || e.id !== m.executorId || e.conn || m.protocol !== PROTOCOL_VERSION) {
        this.log.warn({ component: "executor-pool", type: m.type }, "rejected a connection that did not introduce itself properly");
        conn.socket.end();
        return;
      }
      conn.index = index;
      e.conn = conn;
      this.core.ready(index, Date.now());
      this.log.info({ component: "executor-pool", executorId: e.id, pid: m.pid, python: m.python }, "executor ready");
      this.drainQueue();
      for (const w of this.readyWaiters.splice(0)) w();
      return;
    }
    const e = this.executors[conn.index]!;
    this.core.heard(e.index, Date.now());
    switch (m.type) {
      case "Pong":
        return;
      case "CallWaiting":
        return this.onWaiting(e, m);
      case "CallCompleted":
      case "CallFailed": {
        const call = this.calls.get(m.callId);
        if (!call || call.executor !== e) return;
        call.cpuMs = m.cpuMs;
        const extra = { output: m.output, stdout: m.stdout, stderr: m.stderr, logs: m.logs, compiled: m.compiled };
        if (m.type === "CallCompleted") this.finish(call, { ok: true, value: m.result }, extra);
        else this.finish(call, { ok: false, error: { ...m.error, retryable: isRetryable(m.error.code) } }, extra);
        return;
      }
      default:
        this.log.warn({ component: "executor-pool", executorId: e.id, type: (m as { type: string }).type }, "unknown message from executor");
    }
  }

  private onWaiting(e: Executor, m: Extract<ExecutorMessage, { type: "CallWaiting" }>): void {
    const call = this.calls.get(m.callId);
    if (!call || call.executor !== e) return;
    call.runningSinceMs = null;
    call.cpuMs = m.cpuMs;
    call.suspensions++;
    const answers = m.requests.map((r) => this.serve(call, r));
    void Promise.all(answers).then((results) => {
      // The executor may have died or the call ended meanwhile; then there is nothing to resume.
      if (this.calls.get(m.callId) !== call || call.executor !== e || e.dead) return;
      // Requests of one suspension run concurrently: the call waited as long as the slowest.
      call.ioMs += Math.max(0, ...results.map((r) => r.ioMs));
      call.runningSinceMs = performance.now();
      this.send(e, { type: "ResumeCall", callId: m.callId, results: results.map((r) => r.result), ioMs: call.ioMs });
    });
  }

  private async serve(call: ActiveCall, r: SuspensionRequest): Promise<{ result: ResumeResult; ioMs: number }> {
    try {
      if (r.kind === "io") {
        if (!call.owner.io) return { result: { ok: false, error: { type: "NoBackend", message: `no IO backend is configured here (${r.backend}.${r.op})` } }, ioMs: 0 };
        const { ioMs, ...result } = await call.owner.io(r, call.req.callId);
        return { result: result as ResumeResult, ioMs };
      }
      if (!call.owner.subCall) return { result: { ok: false, error: { type: "NoSubCalls", message: "sub-calls are not available here" } }, ioMs: 0 };
      return { result: await call.owner.subCall(r, call.req.callId), ioMs: 0 };
    } catch (err) {
      return { result: { ok: false, error: { type: "InternalError", message: `serving ${r.kind} request failed: ${(err as Error).message}` } }, ioMs: 0 };
    }
  }

  private onConnClosed(conn: Conn): void {
    if (conn.index === null) return;
    const e = this.executors[conn.index];
    if (e && e.conn === conn) this.markDead(e, null);
  }

  private onExit(e: Executor, code: number, signal: string | null): void {
    if (!e.dead && !this.closed && !e.killReason) {
      this.log.warn({ component: "executor-pool", executorId: e.id, code, signal }, "executor exited");
    }
    this.markDead(e, code);
  }

  /** markDead fails the executor's calls (once) and schedules its restart. */
  private markDead(e: Executor, exitCode: number | null): void {
    if (e.dead) return;
    e.dead = true;
    try {
      // The whole process group: anything the executor forked dies with it.
      if (this.isolation.ownProcessGroup) process.kill(-e.proc.pid, "SIGKILL");
      else e.proc.kill("SIGKILL");
    } catch {
      // already gone
    }
    e.conn?.socket.end();
    const reason = e.killReason ?? {
      code: CallErrorCode.ExecutorCrashed,
      message: `executor ${e.id} died${exitCode !== null ? ` (exit code ${exitCode})` : ""} while running the call`,
    };
    for (const call of [...this.calls.values()]) {
      if (call.executor !== e) continue;
      if (reason.offendingCallId === call.req.callId) {
        this.finish(call, this.failure(CallErrorCode.WallClockExceeded, reason.message));
      } else if (reason.offendingCallId !== undefined) {
        this.finish(call, this.failure(CallErrorCode.ExecutorCrashed, `executor ${e.id} was killed because another call overran its wall-clock ceiling`));
      } else {
        this.finish(call, this.failure(reason.code, reason.message));
      }
    }
    if (this.closed) return;
    const restartAt = this.core.died(e.index, Date.now());
    this.log.warn({ component: "executor-pool", executorId: e.id, reason: reason.code, restartInMs: restartAt - Date.now() }, "executor down; restart scheduled");
    // A start waiting for executors re-checks whether any can still come up.
    for (const w of this.readyWaiters.splice(0)) w();
  }

  private killExecutor(e: Executor, reason: NonNullable<Executor["killReason"]>): void {
    if (e.dead) return;
    e.killReason ??= reason;
    this.markDead(e, null);
  }

  private tick(): void {
    if (this.closed) return;
    const now = Date.now();
    const d = this.core.tick(now);
    for (const i of d.hung) {
      const e = this.executors[i];
      if (e && !e.dead) {
        this.log.error({ component: "executor-pool", executorId: e.id }, "executor hung: no answer to pings; killing it");
        this.killExecutor(e, { code: CallErrorCode.ExecutorHung, message: `executor ${e.id} stopped answering pings and was replaced` });
      }
    }
    for (const i of d.start) {
      this.restarts += this.executors[i] ? 1 : 0;
      this.spawn(i, now);
    }
    for (const i of d.ping) {
      const e = this.executors[i];
      if (e && !e.dead) this.send(e, { type: "Ping", seq: ++this.pingSeq });
    }
    this.checkMemory();
    this.checkWallClock();
  }

  private checkMemory(): void {
    for (const e of this.executors) {
      if (!e || e.dead) continue;
      let rss: number;
      try {
        rss = Number(readFileSync(`/proc/${e.proc.pid}/statm`, "utf8").split(" ")[1]) * PAGE_SIZE;
      } catch {
        continue;
      }
      if (rss > this.config.memoryLimitBytes) {
        const mb = (b: number) => `${Math.round(b / 1048576)} MiB`;
        this.log.error({ component: "executor-pool", executorId: e.id, rssBytes: rss }, "executor over its memory limit; killing it");
        this.killExecutor(e, {
          code: CallErrorCode.OomKilled,
          message: `executor ${e.id} used ${mb(rss)}, over its memory limit of ${mb(this.config.memoryLimitBytes)}, and was killed`,
        });
      }
    }
  }

  private checkWallClock(): void {
    const now = performance.now();
    for (const call of this.calls.values()) {
      const e = call.executor;
      if (!e || e.dead || call.runningSinceMs === null) continue;
      if (now - call.runningSinceMs > this.config.wallClockCeilingMs) {
        this.log.error({ component: "executor-pool", executorId: e.id, callId: call.req.callId }, "call overran the wall-clock ceiling; killing its executor");
        this.killExecutor(e, {
          code: CallErrorCode.WallClockExceeded,
          message: `call ran for more than ${this.config.wallClockCeilingMs} ms of wall-clock time without finishing (a sleep or a blocking call?) and was stopped`,
          offendingCallId: call.req.callId,
        });
      }
    }
  }

  /** startFailure describes executors that died before their Hello: exit, stderr, likely cause. */
  private async startFailure(): Promise<ExecutorStartError> {
    const dead = this.executors.filter((e): e is Executor => e !== null && e.dead && !e.conn);
    // The process has exited: its stderr ends within moments (bounded, should a grandchild hold it).
    await Promise.race([Promise.all(dead.map((e) => e.stderrDone)), Bun.sleep(1000)]);
    const first = dead.find((e) => e.startStderr.length > 0) ?? dead[0];
    const how = first?.exit
      ? first.exit.signal
        ? `was killed by ${first.exit.signal}`
        : `exited with code ${first.exit.code}`
      : (first?.killReason?.message ?? "died");
    const stderr = first && first.startStderr.length > 0 ? first.startStderr.map((l) => `    ${l}`).join("\n") : "    (nothing)";
    const user = this.isolation.runAs?.name ?? `this process's user (uid ${process.getuid?.()})`;
    const cause = likelyStartCause(first?.startStderr ?? [], { python: this.python, pythonPath: this.pythonPath, user, exitCode: first?.exit?.code ?? null });
    return new ExecutorStartError(
      "EXECUTORS_DIED_AT_START",
      `${dead.length} of ${this.config.executorCount} executors died before starting; executor ${first?.id ?? "?"} ${how}. Its stderr:\n${stderr}\n` +
        `likely cause: ${cause}`,
    );
  }

  // --- calls -----------------------------------------------------------------------------

  private dispatch(call: ActiveCall): void {
    const index = this.core.pickExecutor();
    const e = index === null ? null : this.executors[index];
    if (index === null || !e || e.dead || !e.conn) {
      this.queue.push(call);
      return;
    }
    this.core.callAssigned(index);
    call.executor = e;
    const now = performance.now();
    call.firstSentMs ??= now;
    call.runningSinceMs = now;
    this.send(e, {
      type: "ExecuteCall",
      callId: call.req.callId,
      digest: call.digest,
      source: call.req.fn.source,
      entry: call.req.fn.entry,
      ...(call.req.fn.filename ? { filename: call.req.fn.filename } : {}),
      args: call.req.args,
      budgetMs: call.req.budgetMs ?? this.config.callBudgetMs,
    });
  }

  private drainQueue(): void {
    while (this.queue.length > 0 && this.core.pickExecutor() !== null) this.dispatch(this.queue.shift()!);
  }

  private finish(call: ActiveCall, result: CallResult, extra: { output?: string; stdout?: string; stderr?: string; logs?: LogLine[]; compiled?: boolean } = {}): void {
    if (this.calls.get(call.req.callId) === call) this.calls.delete(call.req.callId);
    if (call.executor && !call.executor.dead) this.core.callFinished(call.executor.index);
    call.resolve(this.outcome(call, result, extra));
    this.drainQueue();
  }

  private outcome(
    call: ActiveCall,
    result: CallResult,
    extra: { output?: string; stdout?: string; stderr?: string; logs?: LogLine[]; compiled?: boolean } = {},
  ): CallOutcome {
    const end = performance.now();
    const common = {
      callId: call.req.callId,
      cpuMs: call.cpuMs,
      ioMs: call.ioMs,
      queueMs: (call.firstSentMs ?? end) - call.createdMs,
      totalMs: end - call.createdMs,
      output: extra.output ?? "",
      ...(extra.stderr !== undefined ? { stdout: extra.stdout ?? "", stderr: extra.stderr } : {}),
      logs: extra.logs ?? [],
      executorId: call.executor?.id ?? "",
      compiled: extra.compiled,
      suspensions: call.suspensions,
    };
    return result.ok ? { ...common, ok: true, value: result.value } : { ...common, ok: false, error: result.error };
  }

  private failure(code: CallErrorCode, message: string): { ok: false; error: CallFailure } {
    return { ok: false, error: { code, message, traceback: "", line: 0, column: 0, retryable: isRetryable(code) } };
  }

  // --- wire ------------------------------------------------------------------------------

  /** send queues a frame; frames of one tick go out in one write. */
  private send(e: Executor, m: PoolMessage): void {
    const conn = e.conn;
    if (!conn || e.dead) return;
    conn.corked.push(encodeFrame(m, m.type === "ResumeCall" && m.results.some((r) => r.ok && r.value instanceof RawJson)));
    if (conn.corked.length === 1) queueMicrotask(() => this.uncork(conn));
  }

  private uncork(conn: Conn): void {
    const frames = conn.corked;
    conn.corked = [];
    if (frames.length === 0) return;
    const total = frames.reduce((n, f) => n + f.length, 0);
    // Small frames of one tick go out in one write; large ones (a block) are not copied again.
    let chunks = frames;
    if (frames.length > 1 && total <= COALESCE_MAX_BYTES) {
      const data = new Uint8Array(total);
      let off = 0;
      for (const f of frames) {
        data.set(f, off);
        off += f.length;
      }
      chunks = [data];
    }
    for (const data of chunks) {
      if (conn.backlog.length > 0) {
        conn.backlog.push(data);
        continue;
      }
      const written = conn.socket.write(data);
      if (written < data.length) conn.backlog.push(data.subarray(Math.max(0, written)));
    }
  }

  private flushBacklog(conn: Conn): void {
    while (conn.backlog.length > 0) {
      const data = conn.backlog[0]!;
      const written = conn.socket.write(data);
      if (written < data.length) {
        conn.backlog[0] = data.subarray(Math.max(0, written));
        return;
      }
      conn.backlog.shift();
    }
  }

  private async waitReady(count: number, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.core.readyCount() < count) {
      if (this.core.startHopeless(count)) throw await this.startFailure();
      if (Date.now() > deadline) {
        throw new ExecutorStartError(
          "EXECUTORS_START_TIMEOUT",
          `executors did not start within ${timeoutMs} ms (python ${this.python}, PYTHONPATH ${this.pythonPath})`,
        );
      }
      await new Promise<void>((resolve) => {
        this.readyWaiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  }
}

/**
 * makeRuntimeDir makes the folder of the pool's socket and scratch folders under TMPDIR, or
 * under /tmp when TMPDIR is out of EXECUTOR_USER's reach (executors connect to the socket as
 * that user); neither reachable: an ExecutorStartError naming the folder that blocks.
 */
function makeRuntimeDir(isolation: Isolation): string {
  let problem = "";
  for (const parent of [...new Set([tmpdir(), "/tmp"])]) {
    const dir = mkdtempSync(join(parent, "blockx-pool-"));
    chmodSync(dir, 0o711);
    const blocked = isolation.runAs ? blockingFolder(dir, isolation.runAs, "search") : null;
    if (!blocked) return dir;
    rmSync(dir, { recursive: true, force: true });
    problem ||= `the executors' socket folder ${dir} is out of reach of EXECUTOR_USER ${isolation.runAs!.name}: ${describeBlock(blocked)}`;
  }
  throw new ExecutorStartError("EXECUTOR_CODE_UNREADABLE", `${problem}; set TMPDIR to a folder ${isolation.runAs!.name} can pass through`);
}
