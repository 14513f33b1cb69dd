import type { ChainsConfig } from "../common/config/chains-config";
import type { EtcdAccess } from "../common/etcd/etcd-access";
import type { ExecutorPoolConfig } from "../runtime/executor/executor-pool-config";

/** The roles `blockx doctor` knows; each check says which it applies to. */
export const DOCTOR_ROLES = ["worker", "bundle-worker", "coordinator", "bundle-coordinator", "syncinvoker", "proxy"] as const;
export type DoctorRole = (typeof DOCTOR_ROLES)[number];

/** DoctorContext: what the checks read, taken from the role's own configuration loader (so doctor sees what the role would). */
export interface DoctorContext {
  readonly role: DoctorRole;
  /** Empty for roles without etcd. */
  readonly etcdEndpoints: readonly string[];
  /** ETCD_TLS_* and the etcd user, compiled. */
  readonly etcd: EtcdAccess;
  /** Addresses the role binds, by variable name. */
  readonly listenAddrs: readonly { readonly variable: string; readonly addr: string }[];
  /** The Unix socket the proxy serves, else null. */
  readonly socketPath: string | null;
  /** Roles that run executors. */
  readonly pool: ExecutorPoolConfig | null;
  readonly chains: ChainsConfig | null;
  /** Whether the role serves the synthetic local test chain (LOCALTESTSERVICE_ENABLED, or CHAINS_CONFIG naming it). */
  readonly localTestChain: boolean;
  readonly tableStorePath: string | null;
  readonly clock: { readonly maxOffsetMs: number; readonly testOffsetMs: number };
}

export type CheckStatus = "pass" | "fail";

export interface CheckResult {
  readonly status: CheckStatus;
  /** What was found, for the operator. */
  readonly detail: string;
  /** How to fix a failure (empty on a pass). */
  readonly fix: string;
}

/**
 * DoctorCheck is one thing a host needs for a role. A check is one object in the list of
 * doctor-checks.ts: a new one (the TLS files, the sandbox) is a new entry there.
 */
export interface DoctorCheck {
  readonly id: string;
  readonly title: string;
  readonly appliesTo: (ctx: DoctorContext) => boolean;
  run(ctx: DoctorContext): Promise<CheckResult>;
}

export const pass = (detail: string): CheckResult => ({ status: "pass", detail, fix: "" });
export const fail = (detail: string, fix: string): CheckResult => ({ status: "fail", detail, fix });
