import type { Etcd3, Lease } from "etcd3";
import type { Logger } from "../../common/logging/logger";
import { followerStatusKey, type FollowerStatus } from "../core/follower-status";

/**
 * FollowerStatusPublisher keeps the follower's status (follower-status.ts) at its etcd key under
 * a lease of its own with keep-alives: `blockx tasks` and the dashboard read it; a follower that
 * dies leaves nothing behind once the lease lapses. A put that fails (etcd away, the lease lost)
 * drops the lease and is tried again at the next update; the follower's work never waits for it.
 */
export class FollowerStatusPublisher {
  private lease: Lease | null = null;
  private failing = false;
  private putting: Promise<void> = Promise.resolve();
  private readonly key: string;

  constructor(
    private readonly etcd: Etcd3,
    table: string,
    chain: string,
    private readonly log: Logger,
    private readonly leaseTtlSeconds = 10,
  ) {
    this.key = followerStatusKey(table, chain);
  }

  /** publish puts the status (one put at a time; a newer status waits for the one in flight). */
  publish(status: FollowerStatus): Promise<void> {
    this.putting = this.putting.then(() => this.put(status));
    return this.putting;
  }

  private async put(status: FollowerStatus): Promise<void> {
    try {
      if (!this.lease) {
        const lease = this.etcd.lease(this.leaseTtlSeconds, { autoKeepAlive: true });
        lease.on("lost", () => {
          if (this.lease === lease) this.lease = null;
        });
        lease.on("keepaliveFailed", () => {});
        this.lease = lease;
      }
      await this.lease.put(this.key).value(JSON.stringify(status));
      if (this.failing) this.log.info({ component: "follow", key: this.key }, "follower status published again");
      this.failing = false;
    } catch (err) {
      const lease = this.lease;
      this.lease = null;
      if (lease) void lease.revoke().catch(() => {});
      if (!this.failing) this.log.warn({ component: "follow", key: this.key, err: (err as Error).message }, "could not publish the follower's status in etcd; trying again at the next update");
      this.failing = true;
    }
  }

  /** close revokes the lease (the status key goes with it). */
  async close(waitMs = 2000): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.putting, new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
    const lease = this.lease;
    this.lease = null;
    if (lease) await lease.revoke().catch(() => {});
  }
}
