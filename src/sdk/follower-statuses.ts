import { FOLLOWER_STATUS_PREFIX, followerStatusKey, parseFollowerStatus, type FollowerStatus } from "../follow/core/follower-status";
import { readEtcdPrefix, type EtcdReadConfig } from "./worker-registry";

/**
 * FollowerStatuses: every status a running `blockx follow` published, by table then chain, and
 * the keys under FOLLOWER_STATUS_PREFIX whose value was left out (not a FollowerStatus, or one
 * that names another table or chain than its key does): etcd's contents are never trusted blindly.
 */
export interface FollowerStatuses {
  readonly followers: FollowerStatus[];
  readonly skippedKeys: string[];
}

/** followerStatuses: the statuses among `kv` (etcd keys under FOLLOWER_STATUS_PREFIX and their values), sorted by table and chain. */
export function followerStatuses(kv: Record<string, string>): FollowerStatuses {
  const followers: FollowerStatus[] = [];
  const skippedKeys: string[] = [];
  for (const [key, value] of Object.entries(kv)) {
    if (!key.startsWith(FOLLOWER_STATUS_PREFIX)) continue;
    const status = parseFollowerStatus(value);
    if (status === null || followerStatusKey(status.table, status.chain) !== key) skippedKeys.push(key);
    else followers.push(status);
  }
  followers.sort((a, b) => a.table.localeCompare(b.table) || a.chain.localeCompare(b.chain));
  return { followers, skippedKeys: skippedKeys.sort() };
}

/**
 * readFollowerStatuses reads every follower status published in etcd (ETCD_ENDPOINTS), with the
 * same access and patience as readRegisteredWorkers: UNREACHABLE when etcd does not answer within
 * BLOCKX_RPC_TIMEOUT_MS. A follower that died is absent once its lease lapsed.
 */
export async function readFollowerStatuses(config: EtcdReadConfig): Promise<FollowerStatuses> {
  return followerStatuses(await readEtcdPrefix(config, FOLLOWER_STATUS_PREFIX));
}
