import { readFileSync } from "node:fs";
import type { EtcdAccess } from "./etcd-access";
import { createEtcdClient } from "./etcd-client";
import { etcdPrefixEnd, type EtcdRoleStep } from "./etcd-roles";

/**
 * applyEtcdRoles carries out an etcdRolesPlan on etcd (as `access`: anyone before auth is
 * enabled, root after). Existing roles and users are kept (a user's password is set again from
 * its file); grants are added again, which etcd takes as a no-op. `say` gets one line per step.
 * Throws with etcd's message when a step is refused.
 */
export async function applyEtcdRoles(plan: readonly EtcdRoleStep[], endpoints: readonly string[], access: EtcdAccess, say: (line: string) => void): Promise<void> {
  const etcd = await createEtcdClient({ endpoints, dialTimeoutMs: 5_000, access });
  const auth = etcd.auth;
  try {
    const roles = new Set((await auth.roleList()).roles);
    const users = new Set((await auth.userList()).users);
    for (const s of plan) {
      switch (s.kind) {
        case "roleAdd":
          if (!roles.has(s.role)) await auth.roleAdd({ name: s.role });
          say(`role ${s.role}: ${roles.has(s.role) ? "kept" : "added"}`);
          break;
        case "grant":
          await auth.roleGrantPermission({
            name: s.role,
            perm: { permType: s.perm === "read" ? "Read" : "Readwrite", key: Buffer.from(s.prefix), range_end: etcdPrefixEnd(s.prefix) },
          });
          say(`role ${s.role}: ${s.perm} ${s.prefix}*`);
          break;
        case "userAdd": {
          const password = s.passwordFile === null ? null : readFileSync(s.passwordFile, "utf8").replace(/\r?\n$/, "");
          if (!users.has(s.user)) await auth.userAdd({ name: s.user, password: password ?? "", options: { no_password: password === null } });
          else if (password !== null) await auth.userChangePassword({ name: s.user, password });
          say(`user ${s.user}: ${users.has(s.user) ? "kept" : "added"} (${password === null ? "client certificate only" : `password from ${s.passwordFile}`})`);
          break;
        }
        case "userGrantRole":
          await auth.userGrantRole({ user: s.user, role: s.role });
          break;
        case "authEnable":
          await auth.authEnable();
          say("auth: enabled");
          break;
      }
    }
  } catch (e) {
    throw new Error(`etcd at ${endpoints.join(",")}: ${(e as Error).message}`);
  } finally {
    etcd.close();
  }
}
