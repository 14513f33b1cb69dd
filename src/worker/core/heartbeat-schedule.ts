import type { Decision } from "../../common/core/decision";
import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";
import type { HeartbeatScheduleEvent } from "./heartbeat-schedule-events";
import type { HeartbeatScheduleInstruction, PutReason } from "./heartbeat-schedule-instructions";

export type * from "./heartbeat-schedule-events";
export type * from "./heartbeat-schedule-instructions";

/**
 * HeartbeatPublishMode says which samples a Worker puts into etcd:
 * - EVERY_INTERVAL: every sample, once per HEARTBEAT_INTERVAL_MS (the behaviour before issue 22;
 *   kept for a rolling rollback and as the benchmark's baseline).
 * - ON_CHANGE: a sample only when what a Coordinator decides on changed since the last put, or
 *   when the last put is HEARTBEAT_REFRESH_MS old (so `lastHeartbeatMs` never ages past it).
 */
export type HeartbeatPublishMode = "EVERY_INTERVAL" | "ON_CHANGE";

/** RedLines are the Coordinators' COORDINATOR_*_RED_LINE values, as the Worker was told them. */
export interface RedLines {
  readonly cpu: number;
  readonly memory: number;
  readonly errorRate: number;
}

/** The seed's defaults (COORDINATOR_CPU_RED_LINE, ..._MEMORY_..., ..._ERROR_RATE_...). */
export const DEFAULT_RED_LINES: RedLines = Object.freeze({ cpu: 0.9, memory: 0.9, errorRate: 0.5 });

export interface HeartbeatScheduleConfig {
  readonly mode: HeartbeatPublishMode;
  /** HEARTBEAT_INTERVAL_MS: how often the Worker samples its state. */
  readonly intervalMs: number;
  /** HEARTBEAT_REFRESH_MS: ON_CHANGE puts an unchanged sample once the last put is this old. */
  readonly refreshMs: number;
  readonly redLines: RedLines;
}

/** validateHeartbeatScheduleConfig lists what is wrong (empty: valid). */
export function validateHeartbeatScheduleConfig(c: HeartbeatScheduleConfig): string[] {
  const problems: string[] = [];
  if (!Number.isInteger(c.intervalMs) || c.intervalMs < 1) problems.push(`intervalMs: expected an integer >= 1, got ${c.intervalMs}`);
  if (!Number.isInteger(c.refreshMs) || c.refreshMs < c.intervalMs) {
    problems.push(`refreshMs: expected an integer >= intervalMs (${c.intervalMs}), got ${c.refreshMs}`);
  }
  for (const [name, v] of Object.entries(c.redLines)) {
    if (!(v > 0 && v <= 1)) problems.push(`redLines.${name}: expected a number in (0, 1], got ${v}`);
  }
  return problems;
}

// ------------------------------------------------------------------ the core

/**
 * DecisionKey is what a Coordinator's decisions read from a heartbeat, apart from its age: the
 * capacity (taskSlots and free = taskSlots - reserved - running; the hard filter and the first
 * rank key) and the side of each red line (the other hard filters). Reserved and running count
 * only through their sum: a slot turning from ALLOCATED to RUNNING changes no decision.
 */
interface DecisionKey {
  readonly taskSlots: number;
  readonly free: number;
  readonly overCpu: boolean;
  readonly overMemory: boolean;
  readonly overErrorRate: boolean;
}

function decisionKey(hb: WorkerHeartbeat, r: RedLines): DecisionKey {
  return {
    taskSlots: hb.taskSlots,
    free: hb.taskSlots - hb.reservedSlots - hb.runningTasks,
    overCpu: hb.cpuPercent > r.cpu,
    overMemory: hb.memoryPercent > r.memory,
    overErrorRate: hb.errorRate > r.errorRate,
  };
}

/**
 * HeartbeatScheduleCore decides when the Worker's state is sampled and whether a sample is put
 * into etcd (Sans-IO: its decisions ask the adapter to sample or put and say when to wake; the
 * adapter feeds back the outcomes; `nowMs` is the wall clock the sample's `lastHeartbeatMs` carries).
 *
 * ON_CHANGE puts a sample when, compared with the last put that succeeded under the current lease:
 * the capacity changed, a red line was crossed, the last put failed, the lease is new, or the
 * last put is `refreshMs` old. Every other sample is skipped: the lease (kept alive by the
 * client, which etcd handles without a raft write) carries the Worker's liveness, and the
 * refresh keeps `lastHeartbeatMs` younger than `refreshMs` in every Coordinator's view.
 *
 * The contract the Coordinators rely on (see README, "The registry at scale"):
 * - A change of capacity or of a red-line side is put with the first sample after it, exactly
 *   as EVERY_INTERVAL would put it: the views hold the same decision inputs, at the same time.
 * - Between puts, the view's `lastHeartbeatMs` is at most `refreshMs` older than under
 *   EVERY_INTERVAL (where it is at most `intervalMs` old): the only difference is the age
 *   and the rank among Workers of equal free capacity (the seed's second key).
 * - The next wake is the next tick or the refresh deadline, whichever is first, so a refresh is
 *   never late by up to a tick.
 */
export class HeartbeatScheduleCore {
  private readonly config: HeartbeatScheduleConfig;
  /** The last heartbeat put successfully under the current lease; null: none (or the lease is new). */
  private lastPut: WorkerHeartbeat | null = null;
  private lastPutKey: DecisionKey | null = null;
  private lastPutAtMs = 0;
  private lastPutFailed = false;
  /** The put asked for and not yet reported. */
  private inFlight: WorkerHeartbeat | null = null;
  /** What the core waits for from the adapter: a sample it asked for, a put's outcome, or nothing. */
  private awaiting: "none" | "sample" | "put" = "none";
  /** When to wake next; 0 at first: the first timeAdvanced samples at once. */
  private wakeAtMs: number | null = 0;

  constructor(config: HeartbeatScheduleConfig) {
    const problems = validateHeartbeatScheduleConfig(config);
    if (problems.length > 0) throw new Error(`invalid HeartbeatScheduleConfig: ${problems.join("; ")}`);
    this.config = Object.freeze({ ...config, redLines: Object.freeze({ ...config.redLines }) });
  }

  /**
   * handle feeds one event and returns the decision: the instructions, carried out in order, and
   * when to wake next (null while a sample or a put is awaited: its report decides).
   */
  handle(event: HeartbeatScheduleEvent, nowMs: number): Decision<HeartbeatScheduleInstruction> {
    const out: HeartbeatScheduleInstruction[] = [];
    switch (event.type) {
      case "timeAdvanced":
        if (this.awaiting === "none" && this.wakeAtMs !== null && nowMs >= this.wakeAtMs) {
          this.awaiting = "sample";
          this.wakeAtMs = null;
          out.push({ type: "takeSample" });
        }
        break;
      case "sampleTaken": {
        if (this.inFlight !== null) throw new Error("HeartbeatScheduleCore: sampleTaken while a put is in flight");
        this.awaiting = "none";
        const reason = this.putReason(event.sample, nowMs);
        if (reason === null) {
          this.wakeAtMs = this.nextWakeMs(nowMs);
          break;
        }
        this.inFlight = event.sample;
        this.awaiting = "put";
        this.wakeAtMs = null;
        out.push({ type: "putHeartbeat", heartbeat: event.sample, reason });
        break;
      }
      case "sampleFailed":
        this.awaiting = "none";
        this.wakeAtMs = nowMs + this.config.intervalMs;
        break;
      case "putSucceeded": {
        if (this.inFlight === null) throw new Error("HeartbeatScheduleCore: putSucceeded with no put in flight");
        this.inFlight = null;
        this.awaiting = "none";
        this.lastPut = event.heartbeat;
        this.lastPutKey = decisionKey(event.heartbeat, this.config.redLines);
        this.lastPutAtMs = event.heartbeat.lastHeartbeatMs;
        this.lastPutFailed = false;
        this.wakeAtMs = this.nextWakeMs(nowMs);
        break;
      }
      case "putFailed": {
        if (this.inFlight === null) throw new Error("HeartbeatScheduleCore: putFailed with no put in flight");
        this.inFlight = null;
        this.awaiting = "none";
        this.lastPutFailed = true;
        this.wakeAtMs = nowMs + this.config.intervalMs;
        break;
      }
      case "leaseReplaced":
        // The key went (or goes) with the old lease: the new one gets a put at once, unless a put
        // under way reports first (its outcome then decides).
        this.lastPut = null;
        this.lastPutKey = null;
        if (this.awaiting === "none") this.wakeAtMs = nowMs;
        break;
    }
    return { instructions: out, wakeAtMs: this.wakeAtMs };
  }

  /** validateState checks the invariants and throws on a broken one; tests call it after every step. */
  validateState(): void {
    if ((this.inFlight !== null) !== (this.awaiting === "put")) throw new Error(`a put is ${this.inFlight ? "" : "not "}in flight while awaiting ${this.awaiting}`);
    if (this.awaiting !== "none" && this.wakeAtMs !== null) throw new Error(`a wake-up at ${this.wakeAtMs} while awaiting a ${this.awaiting}`);
    if (this.awaiting === "none" && this.wakeAtMs === null) throw new Error("nothing awaited and no wake-up: the heartbeat would stop");
    if ((this.lastPut === null) !== (this.lastPutKey === null)) throw new Error("the last put and its decision key disagree");
  }

  /** lastPublished is the heartbeat most recently put under the current lease (null: none). */
  get lastPublished(): WorkerHeartbeat | null {
    return this.lastPut;
  }

  private putReason(sample: WorkerHeartbeat, nowMs: number): PutReason | null {
    if (this.lastPutFailed) return "RETRY";
    if (this.lastPut === null || this.lastPutKey === null) return "FIRST";
    if (this.config.mode === "EVERY_INTERVAL") return "EVERY_INTERVAL";
    const k = decisionKey(sample, this.config.redLines);
    const p = this.lastPutKey;
    if (k.taskSlots !== p.taskSlots || k.free !== p.free) return "CAPACITY_CHANGED";
    if (k.overCpu !== p.overCpu || k.overMemory !== p.overMemory || k.overErrorRate !== p.overErrorRate) return "RED_LINE_CROSSED";
    if (nowMs - this.lastPutAtMs >= this.config.refreshMs) return "REFRESH";
    return null;
  }

  private nextWakeMs(nowMs: number): number {
    const tick = nowMs + this.config.intervalMs;
    if (this.config.mode === "EVERY_INTERVAL" || this.lastPut === null) return tick;
    return Math.min(tick, this.lastPutAtMs + this.config.refreshMs);
  }
}
