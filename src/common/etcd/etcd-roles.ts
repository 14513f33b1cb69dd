import { FOLLOWER_STATUS_PREFIX } from "../../follow/core/follower-status";

/**
 * The etcd users and roles of a BlockX cluster (README "Security", etcd): only Workers write under
 * the Worker registry prefixes, only followers (`blockx follow`) under `/blockx/followers/`;
 * Coordinators, the proxy and clients only read `/blockx/`. A user is
 * named by the CN of its etcd client certificate (etcd's --client-cert-auth) or logs in with a
 * password. Pure: the plan and its etcdctl text; `blockx etcd-roles` applies it.
 */

/** The registry prefixes Workers write under by default: the legacy ones and every v2 lane. */
export const DEFAULT_WORKER_WRITE_PREFIXES = ["/blockx/workers/", "/blockx/bundle-workers/", "/blockx/prod/lanes/", "/blockx/test/lanes/"] as const;
/** Everything BlockX keeps in etcd: what readers may read. */
export const BLOCKX_READ_PREFIX = "/blockx/";

export const WRITER_ROLE = "blockx-registry-writer";
export const READER_ROLE = "blockx-registry-reader";
/** Readwrite on FOLLOWER_STATUS_PREFIX: a follower publishes its status there (and nowhere else). */
export const FOLLOWER_ROLE = "blockx-follower-status-writer";

/** The etcd users of the roles, as `blockx certs --etcd-user` names their certificates. */
export const ETCD_USERS = {
  worker: "blockx-worker",
  coordinator: "blockx-coordinator",
  proxy: "blockx-proxy",
  client: "blockx-client",
  follower: "blockx-follower",
} as const;

export type EtcdRoleStep =
  | { readonly kind: "roleAdd"; readonly role: string }
  | { readonly kind: "grant"; readonly role: string; readonly perm: "read" | "readwrite"; readonly prefix: string }
  /** password null: the user authenticates with a client certificate only (etcd's no-password user). */
  | { readonly kind: "userAdd"; readonly user: string; readonly passwordFile: string | null }
  | { readonly kind: "userGrantRole"; readonly user: string; readonly role: string }
  | { readonly kind: "authEnable" };

/**
 * etcdRolesPlan: the steps, in the order they must run: roles and their grants, the users and
 * their roles, `root` (etcd needs it before auth is enabled; administer with a CN=root
 * certificate or root's password), then auth enable. `passwordFileOf(user)`: a file holding the
 * user's password, or null for a certificate-only user.
 */
export function etcdRolesPlan(workerPrefixes: readonly string[], passwordFileOf: (user: string) => string | null): EtcdRoleStep[] {
  const steps: EtcdRoleStep[] = [
    { kind: "roleAdd", role: WRITER_ROLE },
    ...workerPrefixes.map((prefix) => ({ kind: "grant", role: WRITER_ROLE, perm: "readwrite", prefix }) as const),
    { kind: "roleAdd", role: READER_ROLE },
    { kind: "grant", role: READER_ROLE, perm: "read", prefix: BLOCKX_READ_PREFIX },
    { kind: "roleAdd", role: FOLLOWER_ROLE },
    { kind: "grant", role: FOLLOWER_ROLE, perm: "readwrite", prefix: FOLLOWER_STATUS_PREFIX },
  ];
  for (const user of Object.values(ETCD_USERS)) {
    steps.push({ kind: "userAdd", user, passwordFile: passwordFileOf(user) });
    if (user === ETCD_USERS.worker) steps.push({ kind: "userGrantRole", user, role: WRITER_ROLE });
    if (user === ETCD_USERS.follower) steps.push({ kind: "userGrantRole", user, role: FOLLOWER_ROLE });
    steps.push({ kind: "userGrantRole", user, role: READER_ROLE });
  }
  steps.push({ kind: "userAdd", user: "root", passwordFile: passwordFileOf("root") }, { kind: "userGrantRole", user: "root", role: "root" }, { kind: "authEnable" });
  return steps;
}

/** etcdPrefixEnd: the end of the key range of every key starting with `prefix` (etcd's --prefix). */
export function etcdPrefixEnd(prefix: string): Buffer {
  const b = Buffer.from(prefix);
  for (let i = b.length - 1; i >= 0; i--) {
    if (b[i]! < 0xff) {
      const end = b.subarray(0, i + 1);
      end[i]! += 1;
      return Buffer.from(end);
    }
  }
  return Buffer.from([0]);
}

/** renderEtcdctl: the same steps as etcdctl commands (for operators who prefer etcdctl, and --print). */
export function renderEtcdctl(steps: readonly EtcdRoleStep[]): string {
  const quote = (s: string) => (/^[A-Za-z0-9_./:@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
  return steps
    .map((s) => {
      switch (s.kind) {
        case "roleAdd":
          return `etcdctl role add ${quote(s.role)}`;
        case "grant":
          return `etcdctl role grant-permission ${quote(s.role)} --prefix=true ${s.perm} ${quote(s.prefix)}`;
        case "userAdd":
          return s.passwordFile === null ? `etcdctl user add ${quote(s.user)} --no-password` : `etcdctl user add ${quote(s.user)} --new-user-password="$(cat ${quote(s.passwordFile)})"`;
        case "userGrantRole":
          return `etcdctl user grant-role ${quote(s.user)} ${quote(s.role)}`;
        case "authEnable":
          return "etcdctl auth enable";
      }
    })
    .join("\n");
}
