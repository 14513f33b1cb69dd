import { runningNowMs } from "../../common/clock/running-clock";
import { CoreDriver } from "../../common/core/core-driver";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import type { UnixSocketListener } from "bun";
import type { Logger } from "../../common/logging/logger";
import { CallErrorCode, isRetryable, parentCallIdOf, type CallFailure, type CallOutcome, type CallOwner, type CallRequest, type PrefetchedAnswer } from "../calls/call";
import { executorPythonPath } from "./executor-assets";
import { ExecutorStartError } from "./executor-start-error";
import { likelyStartCause } from "./start-failure";
import { blockingFolder, describeBlock } from "./path-access";
import { ExecutorCgroup, findCgroupPlace, probeSelf, sweepStaleCgroups, type CgroupPlace } from "./memory-cgroup";
import { ExecutorConnection } from "./executor-connection";
import { FramedSources } from "./framed-sources";
import { FrameError } from "./frame-codec";
import { LoneCallPoll } from "./lone-call-poll";
import { ExecutorPoolCore } from "./executor-pool-core";
import type { ExecutorPoolEvent } from "./executor-pool-core-events";
import type { ExecutorPoolInstruction } from "./executor-pool-core-instructions";
import type { ExecutorPoolConfig } from "./executor-pool-config";
import { type CallsHeld, callsHeldFields, ExecutorProcess } from "./executor-process";
import { resolveIsolation, resolvePython, SANDBOX_OFF_WARNING, type Isolation } from "./isolation";
import { BwrapSandbox } from "./sandbox/bwrap-sandbox";
import { handOff, type HandoffVia, type SharedBlockStore } from "./block-handoff";
import { probePythonRuntime } from "./sandbox/python-runtime";
import { sourceBytesOver } from "../functions/function-lookup";
import { PROTOCOL_VERSION, SOURCE_NOT_CACHED, type ExecutorMessage, type LogLine, type PoolMessage, type PrefetchedWire, type ResumeResult, type SuspensionRequest } from "./protocol";
import { type JsonValue } from "../json/raw-json";

/** How often live executors' memory is read (EXECUTOR_MEMORY_LIMIT_MB is enforced between reads). */
const MEMORY_SAMPLE_MS = 50;
/** How deep a call's input may nest: the executor's JSON reader recurses per level. */
const MAX_INPUT_DEPTH = 256;
/** Digests the pool remembers having sent to one executor (the executor keeps fewer: a miss is resent). */
const MAX_DIGESTS_REMEMBERED = 1024;
/** Digests whose source was found within EXECUTOR_MAX_SOURCE_BYTES (a 30 MiB source is measured once, not per call). */
const MAX_SIZED_DIGESTS = 1024;
/** How long a closed connection waits for its executor's exit before the executor counts as dead. */
const EXIT_AFTER_CLOSE_WAIT_MS = 250;
/** An executor none of whose calls ended for this long is stalled: an owner's calls spread past it (ExecutorPoolCore.pick). */
const EXECUTOR_STALL_MS = 100;

type CallResult = { ok: true; value: JsonValue } | { ok: false; error: CallFailure };

/** Executor is the pool's record of one incarnation of one slot's executor. */
interface Executor {
  readonly index: number;
  readonly id: string;
  readonly process: ExecutorProcess;
  /** The secret its Hello must carry: one per executor, so a token read by user code opens nothing. */
  readonly token: string;
  /** Set once its Hello was accepted. */
  conn: ExecutorConnection | null;
  /** The shared block store's identity when its Hello said it reads that file (then it gets final blocks by offset), else null. */
  readsStore: string | null;
  /** Why the pool killed it, when it did: decides how its calls fail. */
  killReason: { code: CallErrorCode; message: string; offendingCallId?: string } | null;
  dead: boolean;
  /**
   * Digests whose source this incarnation was sent: later calls carry the digest alone. A new
   * incarnation (a restart, or a recycle for another owner) starts empty, like its interpreter.
   * Insertion order is age: the oldest go first past MAX_DIGESTS_REMEMBERED.
   */
  readonly digestsSent: Set<string>;
  /** Its memory cgroup (EXECUTOR_MEMORY_CGROUP), joined when its Hello is accepted; null without one. */
  cgroup: ExecutorCgroup | null;
}

interface ActiveCall {
  readonly req: CallRequest;
  readonly owner: CallOwner;
  readonly resolve: (o: CallOutcome) => void;
  readonly digest: string;
  readonly createdMs: number;
  executor: Executor | null;
  /** When the executor last got ExecuteCall/ResumeCall; null while suspended or queued. */
  firstSentMs: number | null;
  ioMs: number;
  cpuMs: number;
  suspensions: number;
  cancelled: string | null;
  /** Sent again with its source after the executor answered SOURCE_NOT_CACHED (once at most). */
  sourceResent: boolean;
  /** Its prefetched answer went with its ExecuteCall; the executor took it (its final frame said so). */
  prefetchSent: boolean;
  prefetchUsed: boolean;
}

export interface ExecutorPoolStats {
  readonly executors: { id: string; state: string; pid: number | null; inflight: number }[];
  readonly queued: number;
  readonly restarts: number;
  /** Answers with a span (final blocks of the shared block store), by how they went: by offset, or as bytes. */
  readonly blockHandoffs: Readonly<Record<HandoffVia, number>>;
  /** ExecuteCall frames that carried the source (the rest carried only its digest). */
  readonly sourcesSent: number;
  /** Calls sent again with their source after the executor no longer held it. */
  readonly sourceResends: number;
  /** Large sources whose JSON is held, encoded once, while calls of them are in the pool. */
  readonly sharedSources: number;
  /** Calls that ended with a prefetched answer in their ExecuteCall, by whether they took it. */
  readonly prefetchedAnswers: Readonly<{ taken: number; notTaken: number }>;
  /** Frames to executors whose answer the pool polled for instead of sleeping until it came (a lone call's: EXECUTOR_HOT_WAIT_US). */
  readonly lonePolls: number;
}

/**
 * ExecutorPool runs calls in EXECUTOR_COUNT Python executor processes (executor-py) over one
 * Unix socket. Its decisions (which executor takes a call, pings, hung executors, restarts with
 * backoff) are ExecutorPoolCore's; each executor is an ExecutorProcess, talked to through an
 * ExecutorConnection. A call goes to the least-loaded live executor; its suspensions (IO requests,
 * sub-calls) are served by the CallOwner's callbacks and resumed. A dead executor fails its
 * in-flight calls as retryable and is restarted with backoff; one that stops answering pings
 * is killed as hung; one over its memory limit is killed (OOM_KILLED); a call running past the
 * wall-clock ceiling kills its executor and fails with WALL_CLOCK_EXCEEDED.
 *
 * execute() never throws: every failure is a CallOutcome with a classified error.
 */
export class ExecutorPool {
  private readonly core: ExecutorPoolCore;
  private readonly executors: (Executor | null)[];
  /** Every call from execute() to its end; one not yet sent to an executor waits in the core's queue. */
  private readonly calls = new Map<string, ActiveCall>();
  private readonly runtimeDir: string;
  private readonly socketPath: string;
  private listener: UnixSocketListener<unknown> | null = null;
  /** Runs the core on the running clock: one timer at its next wake-up. */
  private readonly driver: CoreDriver<ExecutorPoolEvent, ExecutorPoolInstruction>;
  private closed = false;
  private restarts = 0;
  private sourcesSent = 0;
  private sourceResends = 0;
  /** Digests whose source is known to be within maxSourceBytes, oldest first. */
  private readonly sizedDigests = new Set<string>();
  /** Large sources' JSON, encoded once for every executor they go to. */
  private readonly framedSources = new FramedSources();
  /** Sub-calls in the pool by their parent's call id (`<parent>/sub-<n>`): they end with it. */
  private readonly children = new Map<string, Set<string>>();
  private pingSeq = 0;
  private readonly python: string;
  readonly isolation: Isolation;
  private readonly readyWaiters: (() => void)[] = [];
  /** The bubblewrap sandbox executors start in (EXECUTOR_SANDBOX=on), or null. */
  private readonly sandbox: BwrapSandbox | null;
  private readonly blockHandoffs: Record<HandoffVia, number> = { mapped: 0, bytes: 0 };
  private readonly prefetchedAnswers = { taken: 0, notTaken: 0 };
  /** Polls the loop for a lone call's answer instead of letting it sleep (config.hotWaitUs). */
  private readonly lonePoll: LoneCallPoll;

  private constructor(
    private readonly config: ExecutorPoolConfig,
    private readonly log: Logger,
    /** The PYTHONPATH of executors: the blockx_executor package, readable by EXECUTOR_USER. */
    readonly pythonPath: string,
    python: string,
    isolation: Isolation,
    /** The block store executors inherit and read final blocks from (EXECUTOR_BLOCK_HANDOFF=mapped), or null. */
    private readonly sharedBlockStore: SharedBlockStore | null,
  ) {
    this.core = new ExecutorPoolCore(config.executorCount, {
      pingIntervalMs: config.pingIntervalMs,
      pingTimeoutMs: config.pingTimeoutMs,
      startTimeoutMs: Math.max(config.pingTimeoutMs, 15_000),
      backoffBaseMs: 100,
      backoffMaxMs: 10_000,
      healthyAfterMs: 30_000,
      maxInflightPerExecutor: 512,
      spread: Math.min(config.executorCount, config.spread > 0 ? config.spread : availableParallelism()),
      stallMs: EXECUTOR_STALL_MS,
      wallClockCeilingMs: config.wallClockCeilingMs,
      memoryLimitBytes: config.memoryLimitBytes,
      memorySampleMs: MEMORY_SAMPLE_MS,
    });
    this.driver = new CoreDriver(this.core, { name: "executor-pool", carryOut: (i) => this.carryOut(i), nowMs: runningNowMs, timeAdvanced: { type: "timeAdvanced" }, log });
    this.executors = Array.from({ length: config.executorCount }, () => null);
    this.lonePoll = new LoneCallPoll(config.hotWaitUs);
    this.python = python;
    this.isolation = isolation;
    for (const w of this.isolation.warnings) if (w !== SANDBOX_OFF_WARNING) log.warn({ component: "executor-pool" }, `isolation: ${w}`);
    this.runtimeDir = makeRuntimeDir(isolation);
    this.socketPath = join(this.runtimeDir, "executors.sock");
    this.sandbox = isolation.sandbox ? makeSandbox(isolation, python, this.runtimeDir) : null;
  }

  /**
   * start spawns every executor and resolves once at least one is ready (all, with waitForAll).
   * It fails with an ExecutorStartError naming the cause: executor code or the socket folder
   * out of EXECUTOR_USER's reach (before anything is spawned), or executors that die before
   * saying Hello (at once, with their own stderr and the likely cause), or the 30 s timeout.
   */
  static async start(config: ExecutorPoolConfig, log: Logger, opts: { waitForAll?: boolean; sharedBlockStore?: SharedBlockStore } = {}): Promise<ExecutorPool> {
    const python = resolvePython(config.python);
    const isolation = resolveIsolation(config);
    const pool = new ExecutorPool(config, log, await executorPythonPath(config.cacheDir, isolation.runAs), python, isolation, opts.sharedBlockStore ?? null);
    if (!isolation.sandbox) log.error({ component: "executor-pool" }, SANDBOX_OFF_WARNING);
    try {
      pool.placeCgroups();
    } catch (e) {
      await pool.close();
      throw e;
    }
    pool.listen();
    try {
      pool.checkSandbox();
    } catch (e) {
      await pool.close();
      throw e;
    }
    // A fresh core has every slot due to start.
    pool.apply({ type: "timeAdvanced" });
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
        firstSentMs: null,
        ioMs: 0,
        cpuMs: 0,
        suspensions: 0,
        cancelled: null,
        sourceResent: false,
        prefetchSent: false,
        prefetchUsed: false,
      };
      if (this.closed) return this.finish(call, this.failure(CallErrorCode.PoolClosed, "the executor pool is shut down"));
      if (this.calls.has(req.callId)) {
        return resolve(this.outcome(call, this.failure(CallErrorCode.Internal, `call id ${req.callId} is already running`)));
      }
      const tooLarge = this.sourceTooLarge(digest, req.fn.source);
      if (tooLarge) return resolve(this.outcome(call, this.failure(CallErrorCode.InputRejected, tooLarge)));
      const parent = parentCallIdOf(req.callId);
      if (parent !== null && !this.calls.has(parent)) {
        // Its parent ended (cancelled, failed) while the sub-call was being resolved: nobody awaits it.
        return resolve(this.outcome(call, this.failure(CallErrorCode.Cancelled, `call cancelled: its parent call ${parent} already ended`)));
      }
      this.calls.set(req.callId, call);
      this.framedSources.hold(digest, req.fn.source);
      if (parent !== null) {
        const siblings = this.children.get(parent);
        if (siblings) siblings.add(req.callId);
        else this.children.set(parent, new Set([req.callId]));
      }
      this.apply({ type: "callSubmitted", callId: req.callId, ownerKey: req.ownerKey ?? "" });
    });
  }

  /** cancel stops a call wherever it is; it ends with CANCELLED. Unknown ids are ignored. */
  cancel(callId: string, reason = "cancelled"): void {
    const call = this.calls.get(callId);
    if (!call || call.cancelled) return;
    call.cancelled = reason;
    if (!call.executor) {
      // Still waiting for an executor: it ends here (and leaves the core's queue).
      this.finish(call, this.failure(CallErrorCode.Cancelled, `call cancelled: ${reason}`));
    } else {
      this.send(call.executor, { type: "CancelCall", callId, reason });
    }
  }

  stats(): ExecutorPoolStats {
    return {
      executors: this.core.slots().map((s) => ({
        id: this.core.executorId(s.index),
        state: s.state,
        pid: this.executors[s.index]?.dead === false ? this.executors[s.index]!.process.pid : null,
        inflight: s.inflight,
      })),
      queued: this.core.queuedCount(),
      restarts: this.restarts,
      blockHandoffs: { ...this.blockHandoffs },
      sourcesSent: this.sourcesSent,
      sourceResends: this.sourceResends,
      sharedSources: this.framedSources.size,
      prefetchedAnswers: { ...this.prefetchedAnswers },
      lonePolls: this.lonePoll.polled,
    };
  }

  /** pids of live executors' interpreters, by slot (tests kill and stop them). */
  pids(): (number | null)[] {
    return this.executors.map((e) => (e && !e.dead ? e.process.interpreterPid() : null));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.lonePoll.stop();
    this.driver.stop();
    for (const call of [...this.calls.values()]) {
      if (!call.executor) this.finish(call, this.failure(CallErrorCode.PoolClosed, "the executor pool is shut down"));
    }
    const exits: Promise<unknown>[] = [];
    for (const e of this.executors) {
      if (!e) continue;
      e.process.retire();
      this.killExecutor(e, { code: CallErrorCode.PoolClosed, message: "the executor pool is shut down" });
      exits.push(e.process.exited);
    }
    await Promise.all(exits);
    // The cgroups go once the processes of their trees have (moments after the exits above).
    if (this.cgroupPlace !== null) await this.removeCgroups(this.cgroupPlace.base);
    this.listener?.stop(true);
    rmSync(this.runtimeDir, { recursive: true, force: true });
  }

  // --- executors -------------------------------------------------------------------------

  private listen(): void {
    this.listener = ExecutorConnection.listen(this.socketPath, this.isolation.runAs, {
      message: (conn, m) => this.onMessage(conn, m),
      malformed: (conn, err) => {
        const e = conn.executorIndex === null ? null : this.executors[conn.executorIndex];
        this.log.error({ component: "executor-pool", err, ...(e ? { executorId: e.id, ...this.callsHeld(e) } : {}) }, "executor sent a malformed frame; closing its connection");
        if (e && e.conn === conn) this.killExecutor(e, { code: CallErrorCode.ExecutorCrashed, message: "executor sent a malformed frame" });
        else conn.end();
      },
      closed: (conn) => this.onConnClosed(conn),
    });
  }

  /** Executors' cgroups not yet removed (a dead one's goes once its tree's processes have exited). */
  private readonly cgroups = new Set<ExecutorCgroup>();

  /** removeCgroup removes a dead executor's cgroup, again every 200 ms while processes of its tree are still exiting. */
  private removeCgroup(g: ExecutorCgroup, tries: number): void {
    queueMicrotask(() => {
      if (g.remove()) return void this.cgroups.delete(g);
      if (tries > 1) setTimeout(() => this.removeCgroup(g, tries - 1), 200).unref?.();
    });
  }

  /** removeCgroups (at close): every executor cgroup, then the pool's folder, within about 2 s. */
  private async removeCgroups(base: string): Promise<void> {
    for (let i = 0; i < 40; i++) {
      for (const g of [...this.cgroups]) if (g.remove()) this.cgroups.delete(g);
      if (this.cgroups.size === 0) {
        try {
          rmdirSync(base);
          return;
        } catch {
          // a cgroup made meanwhile, or one of another's: tried again below
        }
      }
      await Bun.sleep(50);
    }
    this.log.warn({ component: "executor-pool", cgroups: base }, "could not remove the executors' memory cgroups (processes still in them?)");
  }

  /** Where executors' memory cgroups are made (EXECUTOR_MEMORY_CGROUP), or null: sampling alone. */
  private cgroupPlace: CgroupPlace | null = null;

  /** placeCgroups finds where executor memory cgroups can be made; `required` without one refuses to start. */
  private placeCgroups(): void {
    const mode = this.config.memoryCgroup ?? "auto";
    if (mode === "off") return;
    const { place, why } = findCgroupPlace(probeSelf(true));
    this.cgroupPlace = place;
    if (place !== null) {
      const swept = sweepStaleCgroups(place);
      this.log.info({ component: "executor-pool", cgroupVersion: place.version, cgroups: place.base, staleRemoved: swept }, `executor memory limits enforced by the kernel: a memory cgroup per executor (${why})`);
      return;
    }
    if (mode === "required") throw new ExecutorStartError("EXECUTOR_MEMORY_CGROUP_UNAVAILABLE", `EXECUTOR_MEMORY_CGROUP=required, but no memory cgroup can be made for executors: ${why}`);
    this.log.warn({ component: "executor-pool", why }, "no memory cgroup for executors: EXECUTOR_MEMORY_LIMIT_MB is enforced by sampling memory every 50 ms (a burst allocation between samples passes)");
  }

  /** checkSandbox: see startSandboxOnce; where the sandbox cannot start, the role stops here. */
  private checkSandbox(): void {
    if (this.sandbox) startSandboxOnce(this.sandbox, this.isolation, [this.python, "-c", "pass"], { packageDir: this.pythonPath, socketPath: this.socketPath, runtimeDir: this.runtimeDir });
  }

  private spawn(index: number, id: string): void {
    const token = randomBytes(16).toString("hex");
    const spec = {
      id,
      python: this.python,
      isolation: this.isolation,
      socketPath: this.socketPath,
      // One per incarnation, wiped when it exits.
      scratchDir: join(this.runtimeDir, `scratch-${id}`),
      // Its files count against its memory limit (memoryBytes), so the limit bounds them too.
      scratchBytes: this.config.memoryLimitBytes,
      sandbox: this.sandbox,
      pythonPath: this.pythonPath,
      token,
      nprocLimit: this.config.nprocLimit,
      hotSpinUs: this.config.hotSpinUs ?? 0,
      blockStoreFd: this.sharedBlockStore?.fd ?? null,
    };
    // The exit comes later, asynchronously: `e` is set by then.
    const proc = new ExecutorProcess(spec, this.log, (exit) => this.onExit(e, exit.code, exit.signal), () => this.callsHeld(e));
    const e: Executor = { index, id, process: proc, token, conn: null, readsStore: null, killReason: null, dead: false, digestsSent: new Set(), cgroup: null };
    this.executors[index] = e;
    if (this.cgroupPlace !== null && proc.spawnError === null) {
      try {
        e.cgroup = ExecutorCgroup.make(this.cgroupPlace, id, this.config.memoryLimitBytes);
        this.cgroups.add(e.cgroup);
      } catch (err) {
        this.log.warn({ component: "executor-pool", executorId: id, err: (err as Error).message }, "could not make the executor's memory cgroup; its memory is enforced by sampling only");
      }
    }
  }

  /**
   * apply feeds one event to the core through its driver and carries out the instructions, in order
   * (an event reported while instructions are carried out, such as a killed executor's death, is
   * applied at once, between them, as the core allows); the driver's one timer wakes the core when
   * the decision says.
   */
  private apply(event: ExecutorPoolEvent): void {
    this.driver.send(event);
  }

  private carryOut(i: ExecutorPoolInstruction): void {
    if (i.type === "sampleMemory") return this.sampleMemory();
    const e = this.executors[i.index] ?? null;
    const current = e !== null && !e.dead && e.id === i.executorId ? e : null;
    switch (i.type) {
      case "killHungExecutor":
        if (current) {
          this.log.error({ component: "executor-pool", executorId: current.id, ...this.callsHeld(current) }, "executor hung: no answer to pings; killing it");
          this.killExecutor(current, { code: CallErrorCode.ExecutorHung, message: `executor ${current.id} stopped answering pings and was replaced` });
        }
        return;
      case "killExecutor":
        if (current) this.killOverLimit(current, i);
        return;
      case "startExecutor":
        this.restarts += e ? 1 : 0;
        this.spawn(i.index, i.executorId);
        return;
      case "pingExecutor":
        if (current) this.send(current, { type: "Ping", seq: ++this.pingSeq });
        return;
      case "sendCall":
        return this.sendCall(i.callId, current);
      case "recycleExecutor":
        // It holds no calls: it is killed quietly and started afresh for the next owner.
        if (current) this.killExecutor(current, { code: CallErrorCode.ExecutorCrashed, message: `executor ${current.id} was recycled for another owner` });
        return;
      case "scheduleRestart":
        if (!this.closed) {
          const reason = e?.killReason?.code ?? CallErrorCode.ExecutorCrashed;
          this.log.warn({ component: "executor-pool", executorId: i.executorId, reason, restartInMs: Math.round(i.restartAtMs - runningNowMs()) }, "executor down; restart scheduled");
        }
        return;
    }
  }

  private onMessage(conn: ExecutorConnection, m: ExecutorMessage): void {
    if (conn.executorIndex === null) {
      // The first frame must be a Hello carrying our token and the id of an executor we started
      // and still count alive. An executor's exit can be seen before the Hello it sent just before
      // dying (found by the soak): accepting it would mark the slot READY with a dead executor,
      // whose restart then never comes and whose calls wait forever.
      const index = m.type === "Hello" ? Number(m.executorId.split(".")[0]) : -1;
      const e = this.executors[index];
      if (m.type !== "Hello" || !e || m.token !== e.token || e.dead || e.id !== m.executorId || e.conn || m.protocol !== PROTOCOL_VERSION) {
        // Once the pool is shut down, a Hello still on its way (an executor that was starting) is expected.
        if (!this.closed) this.log.warn({ component: "executor-pool", type: m.type }, "rejected a connection that did not introduce itself properly");
        conn.end();
        return;
      }
      conn.executorIndex = index;
      e.conn = conn;
      // It gets blocks by offset only if the file it read its identity from is the store's.
      e.readsStore = this.sharedBlockStore !== null && m.blockStore === this.sharedBlockStore.identity ? m.blockStore : null;
      e.process.markConnected();
      // Into its memory cgroup before any call is sent: user code runs only in calls. One that could
      // not join (its cgroup gone) keeps the pool's sampling, as everywhere without a cgroup.
      if (e.cgroup !== null) {
        const pids = e.process.treePids() ?? [];
        const moved = e.cgroup.join(pids);
        if (moved < pids.length || pids.length === 0) {
          this.log.warn({ component: "executor-pool", executorId: e.id, moved, of: pids.length }, "executor could not join its memory cgroup; its memory is enforced by sampling");
          this.removeCgroup(e.cgroup, 10);
          e.cgroup = null;
        }
      }
      this.lastSpawnError = "";
      this.log.info({ component: "executor-pool", executorId: e.id, pid: m.pid, python: m.python, ...(e.readsStore ? { readsBlockStore: e.readsStore } : {}) }, "executor ready");
      // Waiting calls are sent to it now.
      this.apply({ type: "executorIntroduced", index });
      for (const w of this.readyWaiters.splice(0)) w();
      return;
    }
    const e = this.executors[conn.executorIndex];
    // A late frame of an earlier incarnation's connection is not news of the current executor.
    if (!e || e.conn !== conn) return;
    this.apply({ type: "executorHeardFrom", index: e.index });
    switch (m.type) {
      case "Pong":
        return;
      case "CallWaiting":
        return this.onWaiting(e, m);
      case "CallCompleted":
      case "CallFailed": {
        const call = this.calls.get(m.callId);
        // A late answer of a call already ended (cancelled, timed out) is not the answer a poll waits for.
        if (!call || call.executor !== e) return;
        this.lonePoll.heard();
        if (m.type === "CallFailed" && m.error.code === SOURCE_NOT_CACHED) return this.resendSource(call, e, m.error.message);
        call.cpuMs = m.cpuMs;
        // The prefetched answer's backend time was spent for this call, before it started.
        if (m.prefetchUsed === true && call.prefetchSent && !call.prefetchUsed) {
          call.prefetchUsed = true;
          call.ioMs += call.req.prefetched!.answer.ioMs;
        }
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
    this.lonePoll.heard();
    this.apply({ type: "callWaiting", callId: call.req.callId });
    call.cpuMs = m.cpuMs;
    call.suspensions++;
    const answers = m.requests.map((r) => this.serve(call, r));
    void Promise.all(answers).then((results) => {
      // The executor may have died or the call ended meanwhile; then there is nothing to resume.
      if (this.calls.get(m.callId) !== call || call.executor !== e || e.dead) return;
      // Requests of one suspension run concurrently: the call waited as long as the slowest.
      call.ioMs += Math.max(0, ...results.map((r) => r.ioMs));
      this.apply({ type: "callRunning", callId: call.req.callId });
      const handed = results.map((r, i) => {
        const h = handOff(r.result, m.requests[i]!, e.readsStore);
        if (h.via) this.blockHandoffs[h.via]++;
        return h.result;
      });
      const sent = this.send(e, { type: "ResumeCall", callId: m.callId, results: handed, ioMs: call.ioMs });
      // Answers too large for one frame: the call gets an error for each instead of a dead executor.
      if (sent !== true) {
        const error = { type: "ResultTooLarge", message: `the answers to this suspension do not fit in one frame: ${sent.message}; ask for less at a time` };
        this.send(e, { type: "ResumeCall", callId: m.callId, results: results.map(() => ({ ok: false as const, error })), ioMs: call.ioMs });
      }
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
      // The sub-call gets what remains of this call's budget; what it spends is charged back as waiting.
      const budgetLeftMs = Math.max(0, (call.req.budgetMs ?? this.config.callBudgetMs) - call.cpuMs - call.ioMs);
      const { spentMs, ...result } = await call.owner.subCall(r, call.req.callId, { budgetLeftMs });
      return { result, ioMs: spentMs ?? 0 };
    } catch (err) {
      return { result: { ok: false, error: { type: "InternalError", message: `serving ${r.kind} request failed: ${(err as Error).message}` } }, ioMs: 0 };
    }
  }

  private onConnClosed(conn: ExecutorConnection): void {
    if (conn.executorIndex === null) return;
    const e = this.executors[conn.executorIndex];
    if (!e || e.conn !== conn) return;
    // The exit usually follows within milliseconds: wait for it briefly, so that the calls' error
    // names how the executor ended (exit code, signal) instead of only "died".
    void Promise.race([e.process.exited, Bun.sleep(EXIT_AFTER_CLOSE_WAIT_MS)]).then(() => this.markDead(e, null));
  }

  private onExit(e: Executor, code: number | null, signal: string | null): void {
    // Its kernel OOM kill (if any) is read by markDead first; the cgroup goes once its processes have.
    if (e.cgroup !== null) this.removeCgroup(e.cgroup, 10);
    const spawnError = e.process.spawnError;
    if (spawnError !== null) return this.onSpawnFailed(e, spawnError);
    if (!e.dead && !this.closed && !e.killReason) {
      this.log.warn({ component: "executor-pool", executorId: e.id, code, signal, ...this.callsHeld(e) }, "executor exited");
    }
    this.markDead(e, code);
  }

  /**
   * onSpawnFailed: the host refused to start an executor (out of file descriptors, processes, or
   * space for its scratch folder). The slot restarts after its backoff like any executor that died
   * at start; while no executor is READY, the calls waiting for one fail now, retryably, with the
   * host's words, instead of waiting for a start that may not come. The error is logged once per
   * distinct cause, not at every retry.
   */
  private onSpawnFailed(e: Executor, spawnError: string): void {
    if (!this.closed && spawnError !== this.lastSpawnError) {
      this.log.error({ component: "executor-pool", executorId: e.id, err: spawnError }, "executor could not be started (the host refused: file descriptors, processes or disk); retrying after the restart backoff");
    }
    this.lastSpawnError = spawnError;
    e.killReason ??= { code: CallErrorCode.ExecutorCrashed, message: `executor ${e.id} could not be started: ${spawnError}` };
    this.markDead(e, null);
    if (this.closed || this.core.readyCount() > 0) return;
    const message = `executors could not be started on this Worker: ${spawnError} (the host is out of file descriptors, processes or disk space; the pool retries, and so may the call)`;
    for (const call of [...this.calls.values()]) if (call.executor === null) this.finish(call, this.failure(CallErrorCode.ExecutorCrashed, message));
  }

  /** The last spawn failure logged (one line per distinct cause); cleared when an executor says Hello. */
  private lastSpawnError = "";

  /** markDead fails the executor's calls (once) and schedules its restart. */
  private markDead(e: Executor, exitCode: number | null): void {
    if (e.dead) return;
    if (!e.killReason && e.cgroup !== null && e.cgroup.oomKills() > 0) {
      const mb = Math.round(this.config.memoryLimitBytes / 1048576);
      this.log.error({ component: "executor-pool", executorId: e.id, ...this.callsHeld(e) }, "executor killed by the kernel at its memory limit (its memory cgroup)");
      e.killReason = { code: CallErrorCode.OomKilled, message: `executor ${e.id} reached its memory limit of ${mb} MiB and was killed by the kernel (its memory cgroup)` };
    }
    e.dead = true;
    e.process.kill();
    e.conn?.end();
    // The core first: no waiting call may be sent to this executor while its calls fail below.
    if (this.executors[e.index] === e) this.apply({ type: "executorDied", index: e.index });
    const exit = e.process.exit;
    const how = exit?.signal ? ` (killed by ${exit.signal})` : (exit?.code ?? exitCode) !== null ? ` (exit code ${exit?.code ?? exitCode})` : "";
    const reason = e.killReason ?? {
      code: CallErrorCode.ExecutorCrashed,
      message: `executor ${e.id} died${how} while running the call`,
    };
    const held = this.callsHeld(e);
    if (held.callIds && !this.closed) this.log.warn({ component: "executor-pool", executorId: e.id, reason: reason.code, ...held }, "executor down with calls in flight; they fail and the Worker decides on retries");
    // The calls it was running are charged with its death (one of them caused it), not the host;
    // a pool shutting down is nobody's fault but its own.
    const blame = reason.code === CallErrorCode.PoolClosed ? undefined : ("call" as const);
    for (const call of [...this.calls.values()]) {
      if (call.executor !== e) continue;
      if (reason.offendingCallId === call.req.callId) {
        this.finish(call, this.failure(CallErrorCode.WallClockExceeded, reason.message, blame));
      } else if (reason.offendingCallId !== undefined) {
        this.finish(call, this.failure(CallErrorCode.ExecutorCrashed, `executor ${e.id} was killed because another call overran its wall-clock ceiling`, blame));
      } else {
        this.finish(call, this.failure(reason.code, reason.message, blame));
      }
    }
    if (this.closed) return;
    // A start waiting for executors re-checks whether any can still come up.
    for (const w of this.readyWaiters.splice(0)) w();
  }

  /** callsHeld: the log fields naming the calls `e` runs (their ids begin with their task's id: one id to grep). */
  private callsHeld(e: Executor): CallsHeld {
    const ids: string[] = [];
    for (const call of this.calls.values()) if (call.executor === e) ids.push(call.req.callId);
    return callsHeldFields(ids);
  }

  private killExecutor(e: Executor, reason: NonNullable<Executor["killReason"]>): void {
    if (e.dead) return;
    e.killReason ??= reason;
    this.markDead(e, null);
  }

  /** sampleMemory reads each live executor's resident memory (the pool's one periodic IO) for the core to judge. */
  private sampleMemory(): void {
    if (this.closed) return;
    for (const e of this.executors) {
      // One in a memory cgroup is the kernel's to stop (its tmpfs files are charged there too).
      if (!e || e.dead || (e.cgroup !== null && e.conn !== null)) continue;
      const held = e.process.memoryBytes();
      if (held !== null) this.apply({ type: "memorySampled", index: e.index, rssBytes: held });
    }
  }

  /** killOverLimit carries out the core's killExecutor: over the memory limit, or a call past the wall-clock ceiling. */
  private killOverLimit(e: Executor, i: Extract<ExecutorPoolInstruction, { type: "killExecutor" }>): void {
    if (i.cause === "OVER_MEMORY") {
      const mb = (b: number) => `${Math.round(b / 1048576)} MiB`;
      this.log.error({ component: "executor-pool", executorId: e.id, rssBytes: i.rssBytes, ...this.callsHeld(e) }, "executor over its memory limit; killing it");
      this.killExecutor(e, {
        code: CallErrorCode.OomKilled,
        message: `executor ${e.id} used ${mb(i.rssBytes)} (its processes' memory and the files in its scratch and /tmp), over its memory limit of ${mb(this.config.memoryLimitBytes)}, and was killed`,
      });
      return;
    }
    this.log.error({ component: "executor-pool", executorId: e.id, callId: i.callId, ranMs: i.ranMs }, "call overran the wall-clock ceiling; killing its executor");
    this.killExecutor(e, {
      code: CallErrorCode.WallClockExceeded,
      message: `call ran for more than ${this.config.wallClockCeilingMs} ms of wall-clock time without finishing (a sleep or a blocking call?) and was stopped`,
      offendingCallId: i.callId,
    });
  }

  /** startFailure describes executors that died before their Hello: exit, stderr, likely cause. */
  private async startFailure(): Promise<ExecutorStartError> {
    const dead = this.executors.filter((e): e is Executor => e !== null && e.dead && !e.conn);
    // The process has exited: its stderr ends within moments (bounded, should a grandchild hold it).
    await Promise.race([Promise.all(dead.map((e) => e.process.stderrDone)), Bun.sleep(1000)]);
    const first = dead.find((e) => e.process.startStderr.length > 0) ?? dead[0];
    const exit = first?.process.exit;
    const how = exit ? (exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`) : (first?.killReason?.message ?? "died");
    const startStderr = first?.process.startStderr ?? [];
    const stderr = startStderr.length > 0 ? startStderr.map((l) => `    ${l}`).join("\n") : "    (nothing)";
    const user = this.isolation.runAs?.name ?? `this process's user (uid ${process.getuid?.()})`;
    const cause = likelyStartCause(startStderr, { python: this.python, pythonPath: this.pythonPath, user, exitCode: exit?.code ?? null });
    return new ExecutorStartError(
      "EXECUTORS_DIED_AT_START",
      `${dead.length} of ${this.config.executorCount} executors died before starting; executor ${first?.id ?? "?"} ${how}. Its stderr:\n${stderr}\n` +
        `likely cause: ${cause}`,
    );
  }

  // --- calls -----------------------------------------------------------------------------

  /** sendCall carries out the core's sendCall: the call goes to `e` (the incarnation the core named). */
  private sendCall(callId: string, e: Executor | null): void {
    const call = this.calls.get(callId);
    if (!call) return;
    if (!e || !e.conn) {
      // The core and the pool disagree on whether the executor lives: a bug, never seen.
      this.finish(call, this.failure(CallErrorCode.Internal, `the executor chosen for call ${callId} is gone`));
      return;
    }
    const depth = jsonDepth(call.req.args, MAX_INPUT_DEPTH);
    if (depth > MAX_INPUT_DEPTH) {
      this.finish(call, this.failure(CallErrorCode.InputRejected, `the call's input nests more than ${MAX_INPUT_DEPTH} levels deep (arrays and objects); flatten it`));
      return;
    }
    call.executor = e;
    call.firstSentMs ??= performance.now();
    this.apply({ type: "callRunning", callId: call.req.callId });
    this.sendExecute(call, e, !e.digestsSent.has(call.digest));
  }

  /**
   * sendExecute sends a call's ExecuteCall: with its source the first time its digest goes to this
   * executor, else the digest alone (a 30 MiB source with 1,024 calls in flight is sent once per
   * executor, not 1,024 times). The frames of one connection arrive in order, so a call by digest
   * always follows the one that carried the source.
   */
  private sendExecute(call: ActiveCall, e: Executor, withSource: boolean): void {
    const message: Extract<PoolMessage, { type: "ExecuteCall" }> = {
      type: "ExecuteCall",
      callId: call.req.callId,
      digest: call.digest,
      ...(withSource ? { source: this.framedSources.sourceField(call.digest, call.req.fn.source) } : {}),
      entry: call.req.fn.entry,
      ...(call.req.fn.filename ? { filename: call.req.fn.filename } : {}),
      args: call.req.args,
      budgetMs: call.req.budgetMs ?? this.config.callBudgetMs,
      // A lone call's caller sends the next request only after this answer: the executor may spin for it.
      ...((this.config.hotSpinUs ?? 0) > 0 && this.lone() ? { lone: true as const } : {}),
      ...(call.req.run ? { run: { taskId: call.req.run.taskId, generation: call.req.run.generation } } : {}),
    };
    const prefetched = call.req.prefetched ? this.prefetchedWire(call.req.prefetched, e) : null;
    let sent = this.send(e, prefetched ? { ...message, prefetched: prefetched.wire } : message);
    call.prefetchSent = prefetched !== null && sent === true;
    if (call.prefetchSent && prefetched!.via) this.blockHandoffs[prefetched!.via]++;
    // An answer too large to ride along is no reason to fail the call: it asks for it itself.
    if (sent !== true && prefetched) sent = this.send(e, message);
    if (sent !== true) {
      this.finish(call, this.failure(CallErrorCode.InputRejected, `the call cannot be sent to an executor: ${sent.message} (its ${withSource ? "source and " : ""}input together)`));
      return;
    }
    if (!withSource) return;
    this.sourcesSent++;
    remember(e.digestsSent, call.digest, MAX_DIGESTS_REMEMBERED);
  }

  /**
   * resendSource: the executor no longer holds the source of a call sent by digest (its store is
   * bounded); the call goes again, same id, with the source. A second miss cannot happen (the
   * frame carries the source) and would be a bug: the call fails INTERNAL rather than loop.
   */
  private resendSource(call: ActiveCall, e: Executor, said: string): void {
    e.digestsSent.delete(call.digest);
    if (call.cancelled !== null) return this.finish(call, this.failure(CallErrorCode.Cancelled, `call cancelled: ${call.cancelled}`));
    if (call.sourceResent) return this.finish(call, this.failure(CallErrorCode.Internal, `the executor lost the call's source twice: ${said}`));
    call.sourceResent = true;
    this.sourceResends++;
    this.apply({ type: "callRunning", callId: call.req.callId });
    this.sendExecute(call, e, true);
  }

  /**
   * prefetchedWire: a call's prefetched answer as this executor gets it (a final block by offset
   * when it reads the store, else its bytes), or null when there is nothing worth sending: a failed
   * answer (the function asks itself and gets the error, or a retry's success, the usual way).
   */
  private prefetchedWire(p: PrefetchedAnswer, e: Executor): { wire: PrefetchedWire; via: HandoffVia | null } | null {
    const { ioMs, ...answer } = p.answer;
    if (!answer.ok) return null;
    const h = handOff(answer, p.request, e.readsStore);
    if (!h.result.ok) return null;
    return { wire: { backend: p.request.backend, op: p.request.op, params: p.request.params, result: h.result, ioMs }, via: h.via };
  }

  /** sourceTooLarge: why a source over EXECUTOR_MAX_SOURCE_BYTES is refused, or null (measured once per digest). */
  private sourceTooLarge(digest: string, source: string): string | null {
    if (this.sizedDigests.has(digest)) return null;
    const bytes = sourceBytesOver(source, this.config.maxSourceBytes);
    if (bytes !== null) return `the function's source is ${bytes} bytes, over the limit of ${this.config.maxSourceBytes} (EXECUTOR_MAX_SOURCE_BYTES)`;
    remember(this.sizedDigests, digest, MAX_SIZED_DIGESTS);
    return null;
  }

  private finish(call: ActiveCall, result: CallResult, extra: { output?: string; stdout?: string; stderr?: string; logs?: LogLine[]; compiled?: boolean } = {}): void {
    const id = call.req.callId;
    const registered = this.calls.get(id) === call;
    if (registered) {
      this.calls.delete(id);
      this.framedSources.release(call.digest);
      if (call.prefetchSent) this.prefetchedAnswers[call.prefetchUsed ? "taken" : "notTaken"]++;
      const parent = parentCallIdOf(id);
      const siblings = parent === null ? undefined : this.children.get(parent);
      siblings?.delete(id);
      if (siblings?.size === 0) this.children.delete(parent!);
    }
    call.resolve(this.outcome(call, result, extra));
    // A sub-call ends with its parent: nothing would read its result (Sync Invoker deadlines, cancels, crashes).
    const orphans = registered ? this.children.get(id) : undefined;
    if (orphans) {
      this.children.delete(id);
      for (const child of orphans) this.cancel(child, `its parent call ${id} ended`);
    }
    // Its place on the executor (or in the queue) is free: the next waiting call may go.
    if (registered) this.apply({ type: "callEnded", callId: call.req.callId });
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
      ...(call.prefetchSent ? { prefetchUsed: call.prefetchUsed } : {}),
    };
    return result.ok ? { ...common, ok: true, value: result.value } : { ...common, ok: false, error: result.error };
  }

  private failure(code: CallErrorCode, message: string, blame?: "call"): { ok: false; error: CallFailure } {
    return { ok: false, error: { code, message, traceback: "", line: 0, column: 0, retryable: isRetryable(code), ...(blame ? { blame } : {}) } };
  }

  // --- wire ------------------------------------------------------------------------------

  /** lone: the pool runs one call only (a caller waits on it alone): its answer is polled for, and its executor may spin for the next. */
  private lone(): boolean {
    return this.calls.size === 1;
  }

  /**
   * send queues a frame to a live executor (frames of one tick go out in one write); a frame over the
   * size limit is not sent, and says why. A frame that asks for an answer, sent for the pool's only
   * call, has the loop poll for that answer (LoneCallPoll).
   */
  private send(e: Executor, m: PoolMessage): true | FrameError {
    if (!e.conn || e.dead) return true;
    try {
      e.conn.send(m);
      if (m.type === "ExecuteCall" || m.type === "ResumeCall") this.lonePoll.sent(this.lone());
      return true;
    } catch (err) {
      if (err instanceof FrameError) return err;
      throw err;
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
 * startSandboxOnce starts the sandbox once with `argv` (`python -c pass`) before any executor:
 * where bwrap is missing or user namespaces are not allowed, it throws an ExecutorStartError with
 * bwrap's own words and the fix. (A broken executor package is not its business: executors dying
 * at start say that.)
 */
function startSandboxOnce(sandbox: BwrapSandbox, isolation: Isolation, argv: string[], at: { packageDir: string; socketPath: string; runtimeDir: string }): void {
  const scratchDir = join(at.runtimeDir, "scratch-check");
  mkdirSync(scratchDir, { mode: 0o700 });
  if (isolation.runAs) chownSync(scratchDir, isolation.runAs.uid, isolation.runAs.gid);
  const fd = sandbox.openSeccomp();
  try {
    const full = sandbox.argv({ packageDir: at.packageDir, socketPath: at.socketPath, scratchDir, scratchBytes: 1 << 20 }, argv);
    let r: { exitCode: number | null; stderr: Buffer | undefined };
    try {
      r = Bun.spawnSync(full, { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", PYTHONPATH: at.packageDir }, stdio: ["ignore", "ignore", "pipe", fd] });
    } catch (e) {
      r = { exitCode: null, stderr: Buffer.from((e as Error).message) };
    }
    if (r.exitCode !== 0) {
      const said = (r.stderr?.toString().trim() || `exit code ${r.exitCode}`).replace(/\s*\n\s*/g, "; ");
      throw new ExecutorStartError(
        "EXECUTOR_SANDBOX_UNAVAILABLE",
        `bubblewrap (${sandbox.bwrap}) cannot start an executor's sandbox on this host: ${said}. ` +
          "Install bubblewrap (apt-get install bubblewrap) and allow user namespaces (sysctl user.max_user_namespaces > 0; " +
          "kernel.unprivileged_userns_clone=1 where it exists), or set EXECUTOR_SANDBOX=off to run user code without the sandbox " +
          "(see --help for what that gives up)",
        said,
      );
    }
  } finally {
    BwrapSandbox.closeSeccomp(fd);
    rmSync(scratchDir, { recursive: true, force: true });
  }
}

/**
 * probeExecutorSandbox checks, without starting a pool, that executors configured as `config`
 * can start in their sandbox here (the same check a pool makes before its first executor): a
 * program that starts several roles (`blockx dev`) asks once instead of each role failing alone.
 * EXECUTOR_SANDBOX=off: nothing to check. Throws the pool's ExecutorStartError.
 */
export async function probeExecutorSandbox(config: ExecutorPoolConfig): Promise<void> {
  const isolation = resolveIsolation(config);
  if (!isolation.sandbox) return;
  const python = resolvePython(config.python);
  const packageDir = await executorPythonPath(config.cacheDir, isolation.runAs);
  const runtimeDir = makeRuntimeDir(isolation);
  try {
    const sandbox = makeSandbox(isolation, python, runtimeDir);
    // The sandbox mounts the pool's socket; an empty file stands in for it (nothing connects).
    const socketPath = join(runtimeDir, "executors.sock");
    writeFileSync(socketPath, "");
    startSandboxOnce(sandbox, isolation, [python, "-c", "pass"], { packageDir, socketPath, runtimeDir });
  } finally {
    rmSync(runtimeDir, { recursive: true, force: true });
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

/** makeSandbox prepares the executors' sandbox: the interpreter's folders and the seccomp program. */
function makeSandbox(isolation: Isolation, python: string, runtimeDir: string): BwrapSandbox {
  const s = isolation.sandbox!;
  const drop = s.setpriv && isolation.runAs ? { user: isolation.runAs, setpriv: s.setpriv } : null;
  try {
    return BwrapSandbox.create(s.bwrap, probePythonRuntime(python), drop, runtimeDir);
  } catch (e) {
    throw new ExecutorStartError("EXECUTOR_SANDBOX_UNAVAILABLE", `${(e as Error).message}; set EXECUTOR_SANDBOX=off to run user code without the sandbox`, (e as Error).message);
  }
}

/** remember adds `key` to an insertion-ordered set, dropping the oldest past `max`. */
function remember(set: Set<string>, key: string, max: number): void {
  set.delete(key);
  set.add(key);
  if (set.size > max) set.delete(set.values().next().value!);
}

/** jsonDepth is how deep `v` nests arrays and objects, counted without recursion and only up to `limit` + 1. */
function jsonDepth(v: JsonValue, limit: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[v, 0]];
  while (stack.length > 0) {
    const [x, d] = stack.pop()!;
    if (x === null || typeof x !== "object") continue;
    const depth = d + 1;
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return deepest;
    for (const child of Array.isArray(x) ? x : Object.values(x)) stack.push([child, depth]);
  }
  return deepest;
}
