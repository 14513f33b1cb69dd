// The shipped units and environment files, embedded in the binary so that `blockx install` works
// from a release archive or a copied binary alone. deploy/systemd/ is part of the build digest.
import coordinatorUnit from "../../../deploy/systemd/blockx-coordinator.service" with { type: "text" };
import coordinatorEnv from "../../../deploy/systemd/coordinator.env" with { type: "text" };
import bundleCoordinatorUnit from "../../../deploy/systemd/blockx-bundle-coordinator.service" with { type: "text" };
import bundleCoordinatorEnv from "../../../deploy/systemd/bundle-coordinator.env" with { type: "text" };
import workerUnit from "../../../deploy/systemd/blockx-worker.service" with { type: "text" };
import workerEnv from "../../../deploy/systemd/worker.env" with { type: "text" };
import bundleWorkerUnit from "../../../deploy/systemd/blockx-bundle-worker.service" with { type: "text" };
import bundleWorkerEnv from "../../../deploy/systemd/bundle-worker.env" with { type: "text" };
import syncinvokerUnit from "../../../deploy/systemd/blockx-syncinvoker.service" with { type: "text" };
import syncinvokerEnv from "../../../deploy/systemd/syncinvoker.env" with { type: "text" };
import proxyUnit from "../../../deploy/systemd/blockx-proxy.service" with { type: "text" };
import proxyEnv from "../../../deploy/systemd/proxy.env" with { type: "text" };
import followUnit from "../../../deploy/systemd/blockx-follow.service" with { type: "text" };
import followEnv from "../../../deploy/systemd/follow.env" with { type: "text" };
import chainsJsonText from "../../../deploy/systemd/chains.json" with { type: "text" };

export const INSTALL_ROLES = ["coordinator", "bundle-coordinator", "worker", "bundle-worker", "syncinvoker", "proxy", "follow"] as const;
export type InstallRole = (typeof INSTALL_ROLES)[number];

export interface RoleFiles {
  readonly unit: string;
  readonly env: string;
  /** chains.json for the roles that read chains (CHAINS_CONFIG=/etc/blockx/chains.json). */
  readonly chains: string | null;
}

// TypeScript reads a .json import as JSON; Bun's `type: "text"` gives its text.
const chainsJson = chainsJsonText as unknown as string;

export const deployFiles: Readonly<Record<InstallRole, RoleFiles>> = Object.freeze({
  coordinator: { unit: coordinatorUnit, env: coordinatorEnv, chains: null },
  "bundle-coordinator": { unit: bundleCoordinatorUnit, env: bundleCoordinatorEnv, chains: null },
  worker: { unit: workerUnit, env: workerEnv, chains: chainsJson },
  "bundle-worker": { unit: bundleWorkerUnit, env: bundleWorkerEnv, chains: chainsJson },
  syncinvoker: { unit: syncinvokerUnit, env: syncinvokerEnv, chains: chainsJson },
  proxy: { unit: proxyUnit, env: proxyEnv, chains: null },
  follow: { unit: followUnit, env: followEnv, chains: chainsJson },
});
