import type { Etcd3, Lease } from "etcd3";
import type { Logger } from "../../common/logging/logger";
import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";

export interface HeartbeatPublisherOptions {
  /** Registry prefix, e.g. /blockx/workers/; the key is prefix + workerAddr. */
  readonly prefix: string;
  readonly workerAddr: string;
  /** HEARTBEAT_INTERVAL_MS: 200 by default, 2000 advised in production. */
  readonly intervalMs: number;
  /** Lease TTL in seconds (10). */
  readonly leaseTtlSeconds: number;
}

/**
 * HeartbeatPublisher puts the Worker's WorkerHeartbeat JSON at `<prefix><workerAddr>` under a
 * kept-alive lease every interval. If etcd goes away the Worker keeps serving; puts fail
 * quietly (one warning per outage) and, once etcd is back, the heartbeat is put again under the
 * same lease if it survived or under a new one if it was lost. stop() revokes the lease, so the
 * Worker leaves every Coordinator's view at once instead of after the heartbeat timeout.
 */
export class HeartbeatPublisher {
  private lease: Lease | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;
  private failing = false;
  private publishes = 0;

  constructor(
    private readonly client: Etcd3,
    private readonly opts: HeartbeatPublisherOptions,
    private readonly sample: () => WorkerHeartbeat,
    private readonly log: Logger,
    /** Called at the start of every cycle (the clock-offset check samples here). */
    private readonly onCycle: () => void = () => {},
  ) {}

  get key(): string {
    return this.opts.prefix + this.opts.workerAddr;
  }

  /** Heartbeats put successfully so far (for tests and metrics). */
  get published(): number {
    return this.publishes;
  }

  start(): void {
    void this.beat();
  }

  private async beat(): Promise<void> {
    if (this.stopped) return;
    this.onCycle();
    try {
      const lease = this.currentLease();
      await lease.put(this.key).value(JSON.stringify(this.sample()));
      this.publishes++;
      if (this.failing) {
        this.failing = false;
        this.log.info({ component: "heartbeat", key: this.key }, "heartbeat published again");
      }
    } catch (err) {
      // A put under a lease etcd no longer knows (expired during an outage) fails: start over.
      this.dropLease();
      if (!this.failing) {
        this.failing = true;
        this.log.warn({ component: "heartbeat", key: this.key, err }, "heartbeat failed; retrying every interval while etcd is away");
      }
    }
    if (!this.stopped) this.timer = setTimeout(() => void this.beat(), this.opts.intervalMs);
  }

  private currentLease(): Lease {
    if (!this.lease) {
      const lease = this.client.lease(this.opts.leaseTtlSeconds, { autoKeepAlive: true });
      lease.on("lost", () => {
        if (this.lease === lease) this.lease = null;
      });
      // keepalive failures while etcd is down are expected; 'lost' is what matters.
      lease.on("keepaliveFailed", () => {});
      this.lease = lease;
    }
    return this.lease;
  }

  private dropLease(): void {
    const lease = this.lease;
    this.lease = null;
    if (lease) void lease.revoke().catch(() => {});
  }

  /** stop ends the heartbeats and revokes the lease (deleting the key). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
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
