/** The BlockX TypeScript client SDK. */
export { BlockxClient, isTerminal, stateName, type ClientEvent, type RunResult, type RunTaskOptions, type RunTasksEntry, type TaskHandle, type TaskRef } from "./blockx-client";
export { clientVars, loadClientConfig, type ClientConfig } from "./client-config";
export { clusterFor, resubmitByDefault, type Cluster } from "./core/cluster-selection";
export type { Progress } from "./core/progress";
export { BlockxError, type BlockxErrorCode } from "./sdk-error";
export { followerStatuses, readFollowerStatuses, type FollowerStatuses } from "./follower-statuses";
export type { FollowerStatus } from "../follow/core/follower-status";
