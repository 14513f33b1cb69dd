import type { Etcd3, Lease } from "etcd3";
import type { Logger } from "../../common/logging/logger";
import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";
import { CoreDriver } from "../../common/core/core-driver";
import {
  DEFAULT_RED_LINES,
  HeartbeatScheduleCore,
  type HeartbeatPublishMode,
  type HeartbeatScheduleEvent,
  type HeartbeatScheduleInstruction,
  type PutReason,
  type RedLines,
} from "../core/heartbeat-schedule";

/** DEFAULT_REFRESH_MS: HEARTBEAT_REFRESH_MS, half the seed's COORDINATOR_HEARTBEAT_TIMEOUT_MS. */
export const DEFAULT_REFRESH_MS = 5_000;

export interface HeartbeatPublisherOptions {
  /** Registry prefix, e.g. /blockx/workers/; the key is prefix + workerAddr. */
  readonly prefix: string;
  readonly workerAddr: string;
  /** HEARTBEAT_INTERVAL_MS: how often the state is sampled (200 by default, 2000 advised in production). */
  readonly intervalMs: number;
  /** Lease TTL in seconds (10). */
  readonly leaseTtlSeconds: number;
  /** HEARTBEAT_PUBLISH: ON_CHANGE (default) or EVERY_INTERVAL (every sample, as before issue 22). */
  readonly mode?: HeartbeatPublishMode;
  /** HEARTBEAT_REFRESH_MS (ON_CHANGE): an unchanged state is put again once the last put is this old. */
  readonly refreshMs?: number;
  /** The Coordinators' red lines: crossing one is a change worth a put. */
  readonly redLines?: RedLines;
  /** Called after each successful put with its reason (metrics). */
  readonly onPut?: (reason: PutReason) => void;
}

/**
 * HeartbeatPublisher samples the Worker's WorkerHeartbeat every interval and puts it at
 * `<prefix><workerAddr>` under a kept-alive lease when HeartbeatScheduleCore says so: in ON_CHANGE
 * mode only when the capacity or a red-line side changed, or to refresh `lastHeartbeatMs` before
 * it is `refreshMs` old; in EVERY_INTERVAL mode every sample. If etcd goes away the Worker keeps
 * serving; puts fail quietly (one warning per outage) and, once etcd is back, the heartbeat is put
 * again under the same lease if it survived or under a new one if it was lost (a new lease always
 * gets a put at once: the old key went with the old lease). stop() revokes the lease, so the
 * Worker leaves every Coordinator's view at once instead of after the heartbeat timeout.
 */
export class HeartbeatPublisher {
  private lease: Lease | null = null;
  private stopped = false;
  private failing = false;
  private publishes = 0;
  private samples = 0;
  private readonly core: HeartbeatScheduleCore;
  /** Runs the core on the wall clock (a heartbeat carries wall-clock time): one timer at its next wake. */
  private readonly driver: CoreDriver<HeartbeatScheduleEvent, HeartbeatScheduleInstruction>;

  constructor(
    private readonly client: Etcd3,
    private readonly opts: HeartbeatPublisherOptions,
    private readonly sample: () => WorkerHeartbeat,
    private readonly log: Logger,
    /** Called at the start of every wake (the clock-offset check samples here). */
    private readonly onCycle: () => void = () => {},
  ) {
    this.core = new HeartbeatScheduleCore({
      mode: opts.mode ?? "ON_CHANGE",
      intervalMs: opts.intervalMs,
      refreshMs: opts.refreshMs ?? Math.max(DEFAULT_REFRESH_MS, opts.intervalMs),
      redLines: opts.redLines ?? DEFAULT_RED_LINES,
    });
    this.driver = new CoreDriver(this.core, { name: "heartbeat", carryOut: (i) => this.carryOut(i), nowMs: () => Date.now(), timeAdvanced: { type: "timeAdvanced" }, log });
  }

  get key(): string {
    return this.opts.prefix + this.opts.workerAddr;
  }

  /** Heartbeats put successfully so far (for tests and metrics). */
  get published(): number {
    return this.publishes;
  }

  /** Samples taken so far (one per wake: tick or refresh deadline). */
  get sampled(): number {
    return this.samples;
  }

  start(): void {
    this.driver.advance();
  }

  private carryOut(ins: HeartbeatScheduleInstruction): void {
    if (this.stopped) return;
    if (ins.type === "putHeartbeat") return void this.put(ins.heartbeat, ins.reason);
    this.onCycle();
    let sample: WorkerHeartbeat;
    try {
      sample = this.sample();
    } catch (err) {
      this.log.warn({ component: "heartbeat", key: this.key, err }, "heartbeat sample failed; trying again next interval");
      return this.driver.post({ type: "sampleFailed" });
    }
    this.samples++;
    this.driver.post({ type: "sampleTaken", sample });
  }

  /** put puts the heartbeat under the current lease and reports the outcome to the core. */
  private async put(heartbeat: WorkerHeartbeat, reason: PutReason): Promise<void> {
    try {
      const lease = this.currentLease();
      await lease.put(this.key).value(JSON.stringify(heartbeat));
      if (this.lease !== lease) {
        // The lease was lost while the put was on its way: the new lease has no value yet.
        this.driver.post({ type: "putSucceeded", heartbeat });
        this.driver.post({ type: "leaseReplaced" });
        return;
      }
      this.publishes++;
      this.opts.onPut?.(reason);
      if (this.failing) {
        this.failing = false;
        this.log.info({ component: "heartbeat", key: this.key }, "heartbeat published again");
      }
      this.driver.post({ type: "putSucceeded", heartbeat });
    } catch (err) {
      // A put under a lease etcd no longer knows (expired during an outage) fails: start over.
      this.dropLease();
      if (!this.failing) {
        this.failing = true;
        this.log.warn({ component: "heartbeat", key: this.key, err }, "heartbeat failed; retrying every interval while etcd is away");
      }
      this.driver.post({ type: "putFailed" });
    }
  }

  private currentLease(): Lease {
    if (!this.lease) {
      const lease = this.client.lease(this.opts.leaseTtlSeconds, { autoKeepAlive: true });
      lease.on("lost", () => {
        if (this.lease !== lease) return;
        this.lease = null;
        this.driver.post({ type: "leaseReplaced" });
      });
      // keepalive failures while etcd is down are expected; 'lost' is what matters.
      lease.on("keepaliveFailed", () => {});
      this.lease = lease;
      this.driver.post({ type: "leaseReplaced" });
    }
    return this.lease;
  }

  private dropLease(): void {
    const lease = this.lease;
    this.lease = null;
    if (lease) void lease.revoke().catch(() => {});
    this.driver.post({ type: "leaseReplaced" });
  }

  /** stop ends the heartbeats and revokes the lease (deleting the key). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.driver.stop();
    const lease = this.lease;
    this.lease = null;
    if (lease) {
      try {
        await lease.revoke();
      } catch (err) {
        this.log.warn({ component: "heartbeat", key: this.key, err }, "could not revoke the heartbeat lease; it expires by itself");
      }
    }
  }
}
