import { readFileSync } from "node:fs";
import { clockVars } from "../common/clock/clock-vars";
import { ConfigError, loadEnvConfig } from "../common/config/env-config";
import { ETCD_PLAINTEXT } from "../common/etcd/etcd-access";
import { flagValue } from "../cli/args";
import type { Command } from "../cli/command";
import { UsageError } from "../cli/usage-error";
import { DOCTOR_ROLES, type DoctorContext, type DoctorRole } from "./doctor-check";
import { runChecks } from "./doctor-checks";
import { renderReport, type DoctorReport } from "./doctor-report";

type Env = Readonly<Record<string, string | undefined>>;

const USAGE = `usage: blockx doctor [ROLE] [--json] [--env-file FILE]

Checks this host for ROLE (default worker; one of ${DOCTOR_ROLES.join(", ")}) and prints each
check with PASS or FAIL and, for a failure, the fix. The role's configuration is read as the role
reads it: the environment, with FILE's NAME=value lines on top (--env-file /etc/blockx/worker.env
checks what the systemd unit would run). CLOCK_MAX_OFFSET_MS sets the clock tolerance.
Exit 0 only when every check passes, 1 when one fails, 2 on a usage error.
  --json   one JSON object: {"role", "ok", "checks": [{"id", "title", "status", "detail", "fix"}]}`;

/** readEnvFile: the NAME=value lines of a systemd EnvironmentFile (comments and blank lines skipped, one level of quotes removed). */
export function readEnvFile(path: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new UsageError(`--env-file ${path}: ${(e as Error).message}`);
  }
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m) out[m[1]!] = m[2]!.trim().replace(/^"(.*)"$|^'(.*)'$/, "$1$2");
  }
  return out;
}

/** doctorContext reads the role's configuration with the role's own loader (a ConfigError names every bad variable). */
export async function doctorContext(role: DoctorRole, env: Env): Promise<DoctorContext> {
  const c = loadEnvConfig(clockVars, env);
  const clock = { maxOffsetMs: c.clockMaxOffsetMs, testOffsetMs: c.clockTestOffsetMs };
  const prometheus = (addr: string) => (addr ? [{ variable: "BLOCKX_PROMETHEUS_LISTEN_ADDR", addr }] : []);
  const none = { etcdEndpoints: [], etcd: ETCD_PLAINTEXT, listenAddrs: [], socketPath: null, pool: null, chains: null, localTestChain: false, tableStorePath: null };
  if (role === "worker" || role === "bundle-worker") {
    const [{ loadWorkerRuntimeConfigFromEnv }, { blockWorkerProfile, bundleWorkerProfile }] = await Promise.all([import("../worker/app/config"), import("../worker/core/profile")]);
    const w = loadWorkerRuntimeConfigFromEnv(role === "worker" ? blockWorkerProfile : bundleWorkerProfile, env);
    return {
      ...none,
      role,
      clock,
      etcdEndpoints: w.etcdEndpoints,
      etcd: w.etcd,
      listenAddrs: [{ variable: "WORKER_LISTEN", addr: w.listenAddr }, ...prometheus(w.prometheusListenAddr)],
      pool: w.pool,
      chains: w.chains,
      localTestChain: w.localTestChain.enabled,
      tableStorePath: w.tableStorePath,
    };
  }
  if (role === "coordinator" || role === "bundle-coordinator") {
    const [{ loadCoordinatorRuntimeConfigFromEnv }, { blockProfile, bundleProfile }] = await Promise.all([import("../coordinator/app/config"), import("../coordinator/app/profile")]);
    const k = loadCoordinatorRuntimeConfigFromEnv(role === "coordinator" ? blockProfile : bundleProfile, env);
    return { ...none, role, clock, etcdEndpoints: k.watcher.endpoints, etcd: k.etcd, listenAddrs: [{ variable: "COORDINATOR_LISTEN", addr: k.listenAddr }, ...prometheus(k.prometheusListenAddr)] };
  }
  if (role === "syncinvoker") {
    const { loadSyncInvokerConfig } = await import("../syncinvoker/app/config");
    const s = loadSyncInvokerConfig(env);
    return { ...none, role, clock, listenAddrs: [{ variable: "SYNCINVOKER_LISTEN", addr: s.listenAddr }, ...prometheus(s.prometheusListenAddr)], pool: s.pool, chains: s.chains, localTestChain: s.localTestChain.enabled };
  }
  const { loadProxyConfig } = await import("../proxy/app/config");
  const p = loadProxyConfig(env, []);
  return { ...none, role, clock, listenAddrs: prometheus(p.prometheusListenAddr), socketPath: p.socketPath };
}

/** doctor builds the report: the configuration first; when it loads, every check of the role. */
export async function doctor(role: DoctorRole, env: Env): Promise<DoctorReport> {
  let ctx: DoctorContext;
  try {
    ctx = await doctorContext(role, env);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    const checks = [{ id: "config", title: `the ${role} configuration loads`, status: "fail" as const, detail: e.problems.join("; "), fix: `fix the variables named (blockx ${role} --help lists each with its rule)` }];
    return { role, ok: false, checks };
  }
  const checks = [{ id: "config", title: `the ${role} configuration loads`, status: "pass" as const, detail: `the ${role} configuration loads`, fix: "" }, ...(await runChecks(ctx))];
  return { role, ok: checks.every((c) => c.status === "pass"), checks };
}

export const doctorCommand: Command = {
  name: "doctor",
  summary: "check this host for a role: Python, executor isolation, etcd, clock, ports, chains, table store, limits",
  usage: USAGE,
  vars: clockVars,
  flags: { json: "bool", "env-file": "value" },
  positionals: { optional: ["ROLE"] },
  async run(args) {
    const roleArg = args.positional[0] ?? "worker";
    if (!(DOCTOR_ROLES as readonly string[]).includes(roleArg)) throw new UsageError(`ROLE: one of ${DOCTOR_ROLES.join(", ")}, got ${JSON.stringify(roleArg)}`);
    const role = roleArg as DoctorRole;
    const json = args.flags.has("json");
    const envFile = flagValue(args, "env-file") ?? "";
    if (args.flags.has("env-file") && envFile === "") throw new UsageError("--env-file needs a file");
    const env = envFile ? { ...process.env, ...readEnvFile(envFile) } : process.env;
    const report = await doctor(role, env);
    const who = process.getuid?.() === 0 ? "root" : `uid ${process.getuid?.()}`;
    console.log(json ? JSON.stringify(report) : renderReport(report, `blockx doctor ${role} (as ${who}${envFile ? `, ${envFile} on top of the environment` : ""})`));
    process.exitCode = report.ok ? 0 : 1;
  },
};
