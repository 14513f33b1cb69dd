import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { envVar, listSchema, loadEnvConfig } from "../common/config/env-config";
import { compileEtcdAccess } from "../common/etcd/etcd-access";
import {
  DEFAULT_WORKER_WRITE_PREFIXES,
  ETCD_USERS,
  etcdRolesPlan,
  FOLLOWER_ROLE,
  READER_ROLE,
  renderEtcdctl,
  WRITER_ROLE,
} from "../common/etcd/etcd-roles";
import { FOLLOWER_STATUS_PREFIX } from "../follow/core/follower-status";
import { etcdAccessVars } from "../common/etcd/etcd-vars";
import { flagValue } from "./args";
import type { Command } from "./command";
import { UsageError } from "./usage-error";

const USAGE = [
  "usage: blockx etcd-roles [--print] [--worker-prefixes P1,P2,...] [--password-dir DIR]",
  `  Sets up etcd's users and roles for BlockX, then enables etcd's auth: role ${WRITER_ROLE} (readwrite on`,
  `  each Worker registry prefix; default ${DEFAULT_WORKER_WRITE_PREFIXES.join(",")}), role ${READER_ROLE}`,
  `  (read on /blockx/), role ${FOLLOWER_ROLE} (readwrite on ${FOLLOWER_STATUS_PREFIX}, where blockx follow publishes its status),`,
  `  users ${ETCD_USERS.worker} (registry writer and reader), ${ETCD_USERS.follower} (follower status writer and reader),`,
  `  ${ETCD_USERS.coordinator}, ${ETCD_USERS.proxy}, ${ETCD_USERS.client} (reader),`,
  "  and root. A user authenticates with an etcd client certificate whose CN is its name (blockx certs",
  "  --etcd-user NAME), or with the password in DIR/NAME.password when --password-dir has one (else it has",
  "  no password). Connects as ETCD_ENDPOINTS / ETCD_TLS_* / ETCD_USERNAME say: anyone before auth is enabled,",
  "  root after (a CN=root certificate). Safe to run again: existing roles and users are kept, grants added.",
  "  --print: print the same steps as etcdctl commands instead of applying them.",
].join("\n");

const etcdRolesVars = {
  etcdEndpoints: envVar("ETCD_ENDPOINTS", "localhost:2379", "comma-separated host:port list (or https:// URLs)", "the etcd to set up", listSchema()),
  ...etcdAccessVars,
};

/** `blockx etcd-roles`: the README's etcd role setup as a command anyone can run (and the tests run). */
export const etcdRolesCommand: Command = {
  name: "etcd-roles",
  summary: "set up etcd's users and roles for BlockX (only Workers write the registry) and enable auth",
  usage: USAGE,
  vars: etcdRolesVars,
  flags: { print: "bool", "worker-prefixes": "value", "password-dir": "value" },
  async run(args) {
    const prefixes = (flagValue(args, "worker-prefixes") ?? DEFAULT_WORKER_WRITE_PREFIXES.join(","))
      .split(",")
      .map((p) => p.trim())
      .filter((p) => p !== "");
    for (const p of prefixes) if (!/^\/blockx\/.+\/$/.test(p)) throw new UsageError(`--worker-prefixes: expected prefixes under /blockx/ ending in /, got ${JSON.stringify(p)}`);
    const dirFlag = flagValue(args, "password-dir");
    const dir = dirFlag === undefined ? null : resolve(dirFlag);
    const plan = etcdRolesPlan(prefixes, (user) => (dir !== null && existsSync(join(dir, `${user}.password`)) ? join(dir, `${user}.password`) : null));
    if (args.flags.has("print")) {
      console.log(renderEtcdctl(plan));
      return;
    }
    const v = loadEnvConfig(etcdRolesVars, process.env, args.configArgv);
    const access = compileEtcdAccess(v, v.etcdEndpoints);
    const { applyEtcdRoles } = await import("../common/etcd/etcd-roles-apply");
    try {
      await applyEtcdRoles(plan, v.etcdEndpoints, access, (line) => console.log(line));
    } catch (e) {
      // Not a usage error (exit 2): etcd refused or is unreachable.
      console.error(`blockx etcd-roles: ${(e as Error).message} (after auth is enabled, run this as root: an etcd client certificate with CN=root, or ETCD_USERNAME=root)`);
      process.exitCode = 1;
    }
  },
};

