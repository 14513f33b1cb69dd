import { ETCD_USERS } from "../common/etcd/etcd-roles";
import { CertIssuer } from "../common/tls/cert-issuer";
import { identityFromUri, identityUri, PEER_ROLES } from "../common/tls/peer-identity";
import { flagValue } from "./args";
import type { Command } from "./command";
import { UsageError } from "./usage-error";

const USAGE = [
  "usage: blockx certs --dir DIR --role ROLE [--name NAME] [--hosts H1,H2] [--file FILE] [--days N]",
  "       blockx certs --dir DIR --etcd-user USER [--hosts H1,H2] [--file FILE] [--days N]",
  "  Makes DIR/ca.pem and DIR/ca.key (a private CA) when DIR has none, then issues FILE.pem and FILE.key",
  "  (default FILE: the role, or ROLE-NAME) for the identity blockx://role/ROLE[/NAME].",
  `  ROLE: ${PEER_ROLES.join(", ")}; client, admin and proxy need --name (it owns their tasks and tables;`,
  "  a proxy's callers own theirs as NAME/uid:UID, their Unix user).",
  "  --hosts: the addresses this process serves on (IPs and DNS names, comma-separated); a Worker's must",
  "  cover the address it advertises (WORKER_ADVERTISE_ADDR). Keep ca.key off the cluster's hosts.",
  "  --etcd-user: an etcd certificate instead, CN=USER (the etcd user under --client-cert-auth, as blockx",
  `  etcd-roles names them: ${[...Object.values(ETCD_USERS), "root"].join(", ")});`,
  "  with --hosts it also serves as etcd's server certificate (default FILE: etcd-USER).",
].join("\n");

/**
 * `blockx certs` issues the certificates of a real cluster with Debian's openssl: one CA per
 * cluster, one certificate per process identity (README "Security").
 */
export const certsCommand: Command = {
  name: "certs",
  summary: "make a private CA and issue mTLS certificates: certs --dir DIR --role ROLE [--name NAME] [--hosts H,..]",
  usage: USAGE,
  vars: {},
  flags: { dir: "value", role: "value", name: "value", hosts: "value", file: "value", days: "value", "etcd-user": "value" },
  async run(args) {
    const dir = flagValue(args, "dir");
    const role = flagValue(args, "role");
    const name = flagValue(args, "name") ?? "";
    const etcdUser = flagValue(args, "etcd-user");
    if (!dir) throw new UsageError(`--dir is required\n${USAGE}`);
    if (!role && etcdUser === undefined) throw new UsageError(`--role (or --etcd-user) is required\n${USAGE}`);
    if (role && etcdUser !== undefined) throw new UsageError(`--role and --etcd-user: one certificate at a time, got both\n${USAGE}`);
    const hosts = (flagValue(args, "hosts") ?? "")
      .split(",")
      .map((h) => h.trim())
      .filter((h) => h !== "");
    const daysText = flagValue(args, "days") ?? "825";
    const days = Number(daysText);
    if (!Number.isSafeInteger(days) || days < 1 || days > 3650) throw new UsageError(`--days: expected an integer from 1 to 3650, got ${JSON.stringify(daysText)}`);
    const issuer = CertIssuer.open(dir);
    let files: Record<string, string>;
    let what: string;
    try {
      if (etcdUser !== undefined) {
        files = { ...issuer.issueEtcd(flagValue(args, "file") ?? `etcd-${etcdUser}`, etcdUser, hosts, days) };
        what = `etcd CN=${etcdUser}`;
      } else {
        const id = identityFromUri(`blockx://role/${role}${name ? `/${name}` : ""}`);
        if (id === null) throw new UsageError(`--role ${JSON.stringify(role)} --name ${JSON.stringify(name)}: not an identity (roles: ${PEER_ROLES.join(", ")}; client, admin and proxy need a name of letters, digits, . _ @ -)`);
        files = { ...issuer.issue(flagValue(args, "file") ?? (name ? `${role}-${name}` : role!), id, hosts, days) };
        what = identityUri(id);
      }
    } catch (e) {
      throw e instanceof UsageError ? e : new UsageError((e as Error).message);
    }
    console.log(`issued ${what}${hosts.length ? ` for ${hosts.join(", ")}` : ""} (valid ${days} days); its variables:`);
    for (const [k, v] of Object.entries(files)) console.log(`${k}=${v}`);
  },
};
