import type { Etcd3, Lease } from "etcd3";
import { followerStatusKey, type FollowerStatus } from "../../src/follow/core/follower-status";

/** testFollowerStatus: a follower of `table` on `chain` writing at head, as `blockx follow` would publish it; tests override what they are about. */
export function testFollowerStatus(table: string, chain: string, overrides: Partial<FollowerStatus> = {}): FollowerStatus {
  const now = Date.now();
  return {
    table,
    chain,
    state: "WRITING",
    position: 100,
    head: 103,
    lag: 3,
    confirmations: 0,
    lastReorg: null,
    reorgs: 0,
    blocksWritten: 100,
    stoppedReason: null,
    owner: "alice@follower-host",
    startedAtMs: now - 60_000,
    updatedAtMs: now,
    ...overrides,
  };
}

/**
 * StandInFollower stands in for a running `blockx follow` (built elsewhere): it puts values under
 * the follower status keys with a lease of its own, as the follower does, and revokes the lease
 * at the end, which removes every value it put. `putRaw` writes any text (a malformed status).
 */
export class StandInFollower {
  private constructor(
    private readonly etcd: Etcd3,
    private readonly lease: Lease,
  ) {}

  static async start(etcd: Etcd3, ttlSeconds = 30): Promise<StandInFollower> {
    const lease = etcd.lease(ttlSeconds, { autoKeepAlive: true });
    await lease.grant();
    return new StandInFollower(etcd, lease);
  }

  async publish(status: FollowerStatus): Promise<void> {
    await this.lease.put(followerStatusKey(status.table, status.chain)).value(JSON.stringify(status));
  }

  async putRaw(key: string, value: string): Promise<void> {
    await this.lease.put(key).value(value);
  }

  /** stop revokes the lease: etcd drops every value put under it (what a follower's death leaves once its TTL lapses). */
  async stop(): Promise<void> {
    await this.lease.revoke();
  }
}
