import { z } from "zod";

/**
 * Where a running `blockx follow` publishes how it is doing, for `blockx tasks` and the dashboard:
 * one etcd key per followed (table, chain), under a lease the follower keeps alive (a follower that
 * dies leaves no status behind once the lease lapses), rewritten as its position or head moves.
 */
export const FOLLOWER_STATUS_PREFIX = "/blockx/followers/";

/** followerStatusKey: the key of the follower of `table` on `chain` (both identifiers, so no escaping is needed). */
export function followerStatusKey(table: string, chain: string): string {
  return `${FOLLOWER_STATUS_PREFIX}${table}/${chain}`;
}

const blockNumber = z.number().int().min(-1).max(Number.MAX_SAFE_INTEGER);

/** The last reorganisation a follower went through: blocks orphanedFrom..orphanedTo replaced, position moved back to forkBlock. */
export const FollowerReorgSchema = z.object({
  forkBlock: blockNumber,
  orphanedFrom: blockNumber,
  orphanedTo: blockNumber,
  atMs: z.number().int().min(0),
});

/**
 * FollowerStatus: the value at followerStatusKey (JSON). `position` is the last block written
 * (its rows and its scope-ledger entry durable), `head` the chain's head as last believed, `lag`
 * head - position; `state` FollowerCore's; `stoppedReason` set once it stopped (a reorganisation
 * deeper than the finality depth); `reorgs` counts the reorganisations survived since it started.
 */
export const FollowerStatusSchema = z.object({
  table: z.string().max(63),
  chain: z.string().max(63),
  state: z.enum(["IDLE", "READING", "FINDING_FORK", "WRITING", "REWINDING", "WAITING_RETRY", "STOPPED"]),
  position: blockNumber,
  head: blockNumber,
  lag: z.number().int().min(0),
  confirmations: z.number().int().min(0),
  lastReorg: FollowerReorgSchema.nullable(),
  reorgs: z.number().int().min(0),
  blocksWritten: z.number().int().min(0),
  stoppedReason: z.string().max(2000).nullable(),
  /** Why the last read, write or rewind failed (cleared by the next that succeeds); absent from older followers. */
  lastError: z.string().max(2000).nullable().optional(),
  /** Who runs it: `user@host` (a name, as the SDK's owner label). */
  owner: z.string().max(256),
  startedAtMs: z.number().int().min(0),
  updatedAtMs: z.number().int().min(0),
});

export type FollowerStatus = z.infer<typeof FollowerStatusSchema>;

/** parseFollowerStatus: a published status, or null for a value that is not one (never trusted blindly: it is in etcd). */
export function parseFollowerStatus(text: string): FollowerStatus | null {
  try {
    const r = FollowerStatusSchema.safeParse(JSON.parse(text));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}
