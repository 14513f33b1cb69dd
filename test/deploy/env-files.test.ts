/**
 * Every environment file of deploy/systemd is read by its role's own configuration loader (the
 * zod schema and the cross-variable rules the binary applies at start), as systemd would pass
 * it: active lines, and each commented-out `# NAME=value` alternative on top of them, so an
 * example an operator uncomments (a registry prefix, a file path) is one the role accepts.
 * Paths under /etc/blockx/ are read from deploy/systemd/ (the files the README installs there).
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { TestCa } from "../support/test-ca";
import { join } from "node:path";
import { ConfigError } from "../../src/common/config/env-config";
import { blockProfile, bundleProfile } from "../../src/coordinator/app/profile";
import { loadCoordinatorRuntimeConfigFromEnv } from "../../src/coordinator/app/config";
import { loadProxyConfig } from "../../src/proxy/app/config";
import { loadSyncInvokerConfig } from "../../src/syncinvoker/app/config";
import { loadWorkerRuntimeConfigFromEnv } from "../../src/worker/app/config";
import { loadFollowConfig } from "../../src/follow/app/follow-command";
import { blockWorkerProfile, bundleWorkerProfile } from "../../src/worker/core/profile";

const DEPLOY = join(import.meta.dir, "..", "..", "deploy", "systemd");

type Loader = (env: Record<string, string>) => unknown;
const loaders: Record<string, Loader> = {
  coordinator: (env) => loadCoordinatorRuntimeConfigFromEnv(blockProfile, env),
  "bundle-coordinator": (env) => loadCoordinatorRuntimeConfigFromEnv(bundleProfile, env),
  worker: (env) => loadWorkerRuntimeConfigFromEnv(blockWorkerProfile, env),
  "bundle-worker": (env) => loadWorkerRuntimeConfigFromEnv(bundleWorkerProfile, env),
  syncinvoker: (env) => loadSyncInvokerConfig(env),
  proxy: (env) => loadProxyConfig(env, []),
  follow: (env) => loadFollowConfig(env),
};

interface EnvFile {
  readonly active: Record<string, string>;
  /** `# NAME=value` lines: alternatives an operator may uncomment. */
  readonly alternatives: [string, string][];
}

// The certificates an operator makes with `blockx certs` into /etc/blockx/tls/: made here by a
// test CA, one per file name the env files use (the role is in the name).
const ca = TestCa.create();
const TLS_DIR = ca.dir;
for (const [file, uri] of [
  ["coordinator", "blockx://role/coordinator"],
  ["worker", "blockx://role/worker"],
  ["syncinvoker", "blockx://role/syncinvoker"],
  ["proxy", "blockx://role/client/proxy"],
  ["client", "blockx://role/client/follower"],
] as const) {
  ca.issue(file, uri); // TLS_DIR/FILE.pem and FILE.key, beside TLS_DIR/ca.pem
}
for (const user of ["worker", "coordinator", "proxy"]) ca.issueEtcd(`etcd-${user}`, `blockx-${user}`);

function readEnvFile(role: string): EnvFile {
  const active: Record<string, string> = {};
  const alternatives: [string, string][] = [];
  const local = (v: string) => v.replaceAll("/etc/blockx/tls/", `${TLS_DIR}/`).replaceAll("/etc/blockx/", `${DEPLOY}/`);
  for (const line of readFileSync(join(DEPLOY, `${role}.env`), "utf8").split("\n")) {
    const a = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (a) active[a[1]!] = local(a[2]!);
    const c = /^#\s*([A-Z][A-Z0-9_]*)=(\S*)$/.exec(line);
    if (c) alternatives.push([c[1]!, local(c[2]!)]);
  }
  return { active, alternatives };
}

function problemsOf(load: Loader, env: Record<string, string>): string[] {
  try {
    load(env);
    return [];
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
}

describe("deploy/systemd environment files", () => {
  test("one environment file per role, each with a loader here", () => {
    const roles = readdirSync(DEPLOY).filter((f) => f.endsWith(".env")).map((f) => f.replace(/\.env$/, "")).sort();
    expect(roles).toEqual(Object.keys(loaders).sort());
  });

  for (const [role, load] of Object.entries(loaders)) {
    test(`${role}.env: accepted by the ${role}'s configuration, and so is every commented-out alternative`, () => {
      const { active, alternatives } = readEnvFile(role);
      expect(problemsOf(load, active)).toEqual([]);
      for (const [name, value] of alternatives) {
        expect({ [name]: value, problems: problemsOf(load, { ...active, [name]: value }) }).toEqual({ [name]: value, problems: [] });
      }
    });
  }

  test("Workers and the Sync Invoker read real chains from the installed chains.json, not the synthetic chain (off unless configured)", () => {
    for (const role of ["worker", "bundle-worker", "syncinvoker"]) {
      const { active } = readEnvFile(role);
      expect(active.CHAINS_CONFIG).toBe(`${DEPLOY}/chains.json`);
      const config = loaders[role]!(active) as { chains: { chains: Record<string, { source: string }> }; localTestChain: { enabled: boolean } };
      expect(config.chains.chains.ethereum!.source).toBe("rpc");
      expect({ role, localTestChain: config.localTestChain.enabled }).toEqual({ role, localTestChain: false });
      // Without CHAINS_CONFIG too: a production role never serves the synthetic chain by omission.
      const { CHAINS_CONFIG: _, ...bare } = active;
      expect({ role, bare: (loaders[role]!(bare) as { localTestChain: { enabled: boolean } }).localTestChain.enabled }).toEqual({ role, bare: false });
    }
  });

  test("the check catches what issue 14 found: a v2 prefix without the block- kind is rejected, naming the variable", () => {
    const { active } = readEnvFile("worker");
    const problems = problemsOf(loaders.worker!, { ...active, WORKER_REGISTRY_PREFIX: "/blockx/test/lanes/default/workers/" });
    expect(problems.join("\n")).toContain("WORKER_REGISTRY_PREFIX");
  });
});
