import { redactSecrets, rememberSecret } from "../../common/config/secret-text";
import { findPostgresBinDir, postgresBinDirs, PrivatePostgres } from "../adapters/private-postgres";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createLogger } from "../../common/logging/logger";
import { BlockxClient } from "../../sdk/blockx-client";
import { loadClientConfig } from "../../sdk/client-config";
import { startUiServer, type UiServer } from "../../ui/ui-server";
import { DevChild } from "../adapters/dev-child";
import { locateEtcd } from "../adapters/etcd-binary";
import { freePort, freePorts } from "../adapters/free-port";
import { CertIssuer } from "../../common/tls/cert-issuer";
import { clientEnvironment, devLayout, etcdTlsOf, launchFor, renderEnvFile, type DevLayout, type DevTls } from "../core/child-launch";
import { DEFAULT_WORKER_WRITE_PREFIXES, ETCD_USERS, FOLLOWER_ROLE, etcdRolesPlan } from "../../common/etcd/etcd-roles";
import { planChildren, type ChildRole } from "../core/dev-plan";
import { DevError } from "../core/dev-error";
import { SupervisorCore } from "../core/supervisor-core";
import { CoreDriver } from "../../common/core/core-driver";
import type { SupervisorEvent } from "../core/supervisor-events";
import type { SupervisorInstruction } from "../core/supervisor-instructions";
import type { DevConfig } from "./config";

export interface DevEnvironment {
  /** Names of the subcommands this build has (syncinvoker and proxy run only when present). */
  readonly commands: ReadonlySet<string>;
  /** Environment names each subcommand declares. */
  readonly declaredVars: (role: ChildRole) => ReadonlySet<string>;
}

/** selfArgv: how to run this same program again, compiled or from source. */
function selfArgv(): string[] {
  return Bun.isStandaloneExecutable ? [process.execPath] : [process.execPath, Bun.main];
}

function prepareDir(config: DevConfig): { layout: DevLayout; temporary: boolean } {
  let dir = config.dir;
  const temporary = dir === "";
  try {
    if (temporary) dir = mkdtempSync(join(tmpdir(), "blockx-dev-"));
    dir = resolve(dir);
    const layout = devLayout(dir);
    mkdirSync(layout.functionsDir, { recursive: true });
    rmSync(layout.etcdDataDir, { recursive: true, force: true });
    rmSync(layout.tmpDir, { recursive: true, force: true });
    mkdirSync(layout.tmpDir, { recursive: true });
    // Workers may run executors as another user (EXECUTOR_USER): they must reach the files.
    chmodSync(dir, 0o755);
    return { layout, temporary };
  } catch (e) {
    throw new DevError("DEV_DIR_UNUSABLE", `DEV_DIR ${JSON.stringify(dir)}: ${(e as Error).message}`);
  }
}

/**
 * startDevPostgres starts `--postgres`'s private server (Debian's binaries; a temporary folder that
 * `nobody` can reach when running as root) with a database `blockx` for the Workers' tables. Only
 * the password (random, in the URL and in the 0600 blockx-dev.env) gets in: see PrivatePostgres.
 */
async function startDevPostgres(config: DevConfig): Promise<{ server: PrivatePostgres; url: string }> {
  if (config.tableStoreUrl !== "") throw new DevError("CONFLICTING_STORES", "--postgres starts a Postgres of its own: unset TABLE_STORE_URL, or drop --postgres to use that one");
  const checkout = dirname(dirname(process.execPath));
  const binDir = findPostgresBinDir(process.env, checkout) ?? findPostgresBinDir(process.env, process.cwd());
  if (!binDir) {
    throw new DevError(
      "POSTGRES_NOT_FOUND",
      `Postgres not found (looked in ${postgresBinDirs(process.env, checkout).join(", ")}). Run \`make deps\` in the checkout (it gets Debian's postgresql-15), or set BLOCKX_POSTGRES_BINDIR.`,
    );
  }
  try {
    const server = await PrivatePostgres.start({ binDir, port: await freePort() });
    // The URL carries the password: the terminal and the logs show it as ***; blockx-dev.env (0600) has it.
    rememberSecret("value", server.password);
    return { server, url: await server.createDatabase("blockx") };
  } catch (e) {
    throw new DevError("POSTGRES_FAILED", `the private Postgres did not start: ${(e as Error).message}`);
  }
}

/**
 * devTls: secure by default: a private CA in DIR/tls (made on first use, kept with --keep) and a
 * certificate for each role and for the client, all for 127.0.0.1 and localhost. Plaintext only
 * when BLOCKX_INSECURE=1 was chosen.
 */
function devTls(config: DevConfig, layout: DevLayout): DevTls {
  if (config.insecure) return { kind: "insecure" };
  const issuer = CertIssuer.open(join(layout.dir, "tls"), { caName: "blockx-dev-ca" });
  const hosts = ["127.0.0.1", "localhost"];
  return {
    kind: "mtls",
    files: {
      coordinator: issuer.issue("coordinator", { role: "coordinator", name: "dev" }, hosts),
      worker: issuer.issue("worker", { role: "worker", name: "dev" }, hosts),
      syncinvoker: issuer.issue("syncinvoker", { role: "syncinvoker", name: "dev" }, hosts),
      client: issuer.issue("client", { role: "client", name: "dev" }, hosts),
    },
    etcdServer: issuer.issueEtcd("etcd-server", "etcd-server", hosts),
    etcdUsers: {
      worker: issuer.issueEtcd("etcd-worker", ETCD_USERS.worker),
      coordinator: issuer.issueEtcd("etcd-coordinator", ETCD_USERS.coordinator),
      proxy: issuer.issueEtcd("etcd-proxy", ETCD_USERS.proxy),
      client: issuer.issueEtcd("etcd-client", ETCD_USERS.client),
      root: issuer.issueEtcd("etcd-root", "root"),
    },
  };
}

/**
 * setUpDevEtcd gives dev's etcd the cluster's roles (`blockx etcd-roles`' plan) and enables its
 * auth, as dev's root certificate, before any other child starts: dev's children meet the same
 * etcd permissions as a real cluster's.
 */
async function setUpDevEtcd(endpoint: string, tls: DevTls): Promise<void> {
  if (tls.kind === "insecure") return;
  const { applyEtcdRoles } = await import("../../common/etcd/etcd-roles-apply");
  // One difference from a cluster: dev's one client identity may also publish a follower's status
  // (a `blockx follow` run with blockx-dev.env shows in `blockx tasks` and the dashboard); a cluster
  // gives followers an etcd user of their own (blockx-follower).
  const plan = etcdRolesPlan(DEFAULT_WORKER_WRITE_PREFIXES, () => null);
  const enable = plan.findIndex((s) => s.kind === "authEnable");
  plan.splice(enable, 0, { kind: "userGrantRole", user: ETCD_USERS.client, role: FOLLOWER_ROLE });
  await applyEtcdRoles(plan, [endpoint], { tls: etcdTlsOf(tls, "root"), auth: null }, () => {});
}

/**
 * checkExecutorSandbox starts one sandbox as the Workers would, before anything else starts: where
 * it cannot start, dev stops at once with one line and the fix, instead of every Worker failing
 * alone and the cluster stopping half-started. It does not fall back to EXECUTOR_SANDBOX=off on
 * its own: dev should run functions as production does (a function that reads a file or opens a
 * socket must fail here too), and running code unsandboxed is the user's explicit choice.
 */
async function checkExecutorSandbox(): Promise<void> {
  const { probeExecutorSandbox } = await import("../../runtime/executor/executor-pool");
  const { ExecutorStartError } = await import("../../runtime/executor/executor-start-error");
  const { executorPoolConfigFrom, executorPoolVars } = await import("../../runtime/executor/executor-pool-config");
  const { loadEnvConfig } = await import("../../common/config/env-config");
  const { locateBwrap, BWRAP_CACHE_PATH } = await import("../../runtime/executor/isolation");
  const config = executorPoolConfigFrom(loadEnvConfig(executorPoolVars, process.env));
  try {
    await probeExecutorSandbox(config);
  } catch (e) {
    // Not the sandbox (the executor code cannot be unpacked, the interpreter is missing): its own words.
    if (!(e instanceof ExecutorStartError) || e.code !== "EXECUTOR_SANDBOX_UNAVAILABLE") throw new DevError("EXECUTORS_UNAVAILABLE", `executors cannot start here: ${(e as Error).message}`);
    const bwrap = locateBwrap(config.bwrap);
    const problem = bwrap.includes("/") ? e.said : `bubblewrap (${bwrap}) is not installed (looked on PATH and in the checkout's ${BWRAP_CACHE_PATH})`;
    throw new DevError(
      "SANDBOX_UNAVAILABLE",
      `executors cannot start in their sandbox here: ${problem}. Fix: \`make demo\` or \`make deps\` in the checkout ` +
        "(fetches Debian's bubblewrap into .cache), or apt-get install bubblewrap; allow user namespaces " +
        "(sysctl -w user.max_user_namespaces=15000); or run your own functions unsandboxed: EXECUTOR_SANDBOX=off blockx dev",
    );
  }
}

/**
 * runDev starts the local cluster and returns the exit code once every child has ended. The
 * decisions are SupervisorCore's; this function only carries them out (spawn, signal, print)
 * and feeds back readiness, exits, signals and ticks.
 */
export async function runDev(config: DevConfig, devEnv: DevEnvironment): Promise<number> {
  const etcdBin = locateEtcd(config.etcdBin, { execPath: process.execPath, cwd: process.cwd(), path: process.env.PATH ?? "" });
  if (config.workers + config.bundleWorkers > 0 || devEnv.commands.has("syncinvoker")) await checkExecutorSandbox();
  const { layout, temporary } = prepareDir(config);
  const postgres = config.postgres ? await startDevPostgres(config) : undefined;
  const tableStoreUrl = postgres ? postgres.url : config.tableStoreUrl;
  const tls = devTls(config, layout);
  const plan = planChildren({
    workers: config.workers,
    bundleWorkers: config.bundleWorkers,
    syncInvoker: devEnv.commands.has("syncinvoker"),
    proxy: config.proxy && devEnv.commands.has("proxy"),
  });
  // etcd's two ports and every blockx child's /metrics port (so dev can list them before the
  // children start) are chosen now, all at once: distinct from each other.
  const metricsChildren = plan.filter((c) => c.role !== "etcd");
  const [etcdClientPort, etcdPeerPort, ...metricsPorts] = (await freePorts(2 + metricsChildren.length)) as [number, number, ...number[]];
  const metricsAddrs = new Map(metricsChildren.map((c, i) => [c.id, `127.0.0.1:${metricsPorts[i]}`]));
  const core = new SupervisorCore(plan, { readyTimeoutMs: config.readyTimeoutMs, stopGraceMs: config.stopGraceMs });
  const children = new Map<string, DevChild>();
  const endpoints = new Map<string, string>();
  // The terminal never shows a secret (a store URL's password); the 0600 env file keeps them.
  const say = (line: string) => process.stderr.write(redactSecrets(`blockx dev: ${line}\n`));
  const echo = (line: string) => process.stderr.write(redactSecrets(line + "\n"));
  say(`directory ${layout.dir} (logs: <child>.log)`);

  let finish!: (code: number) => void;
  const finished = new Promise<number>((r) => (finish = r));
  // One driver runs the core: its timer wakes it at the readiness and stop-grace deadlines.
  const driver = new CoreDriver<SupervisorEvent, SupervisorInstruction>(core, { name: "dev", carryOut: (i) => carryOut(i), nowMs: () => performance.now(), timeAdvanced: { type: "timeAdvanced" } });
  const apply = (event: SupervisorEvent) => driver.post(event);
  const carryOut = (i: SupervisorInstruction) => {
    switch (i.type) {
      case "spawnChild": {
        const launch = launchFor(i.child, {
          layout,
          etcdBin,
          etcdClientPort,
          etcdPeerPort,
          self: selfArgv(),
          executorsPerWorker: config.executorsPerWorker,
          logLevel: config.logLevel,
          endpoints,
          tableStoreUrl,
          metricsAddrs,
          declaredVars: devEnv.declaredVars,
          tls,
        });
        const child = new DevChild(i.child.id, launch, {
          logFile: join(layout.dir, `${i.child.id}.log`),
          baseEnv: process.env,
          terminalLevel: config.terminalLogLevel,
          echo,
          onReady: (endpoint) => {
            const ready = () => {
              endpoints.set(i.child.id, endpoint);
              apply({ type: "childReady", id: i.child.id, endpoint });
            };
            if (i.child.role !== "etcd") return ready();
            setUpDevEtcd(endpoint, tls).then(ready, (e: Error) => {
              say(`etcd's roles could not be set up: ${e.message}`);
              apply({ type: "stopRequested", signal: "SIGTERM" });
            });
          },
        });
        children.set(i.child.id, child);
        void child.exited.then(({ code, signal }) => apply({ type: "childExited", id: i.child.id, code, signal }));
        break;
      }
      case "signalChild":
        children.get(i.id)?.signal(i.signal);
        break;
      case "announceReady":
        announce(i.endpoints);
        break;
      case "report":
        say(i.message);
        break;
      case "exit":
        finish(i.code);
        break;
    }
  };
  let ui: UiServer | null = null;
  let uiClient: BlockxClient | null = null;
  const announce = (ready: ReadonlyArray<readonly [string, string]>) => {
    // The dashboard runs inside dev itself, reading the cluster as any client would.
    if (config.ui) {
      const clientEnv = Object.fromEntries(clientEnvironment({ layout, endpoints, etcdClientPort, tableStoreUrl, tls }));
      uiClient = new BlockxClient(loadClientConfig({ ...clientEnv, PROXY_SOCKET_PATH: "" }));
      ui = startUiServer(uiClient, { listenAddr: "127.0.0.1:0", refreshMs: 1000, maxStreams: 32 }, createLogger("warn", { role: "ui" }, 2));
    }
    const vars = clientEnvironment({ layout, endpoints, etcdClientPort, tableStoreUrl, metricsAddrs, tls, ...(ui ? { uiUrl: ui.url } : {}) });
    // 0600: it holds the private Postgres's password and the dashboard's token (a kept file keeps its mode: set it again).
    writeFileSync(layout.envFilePath, renderEnvFile(vars), { mode: 0o600 });
    chmodSync(layout.envFilePath, 0o600);
    const width = Math.max(...ready.map(([id]) => id.length));
    const lines = ["ready:", ...ready.map(([id, ep]) => `  ${id.padEnd(width)}  ${ep}  (pid ${children.get(id)?.pid})`)];
    lines.push(`client environment (also in ${layout.envFilePath}; \`source\` it):`, ...renderEnvFile(vars).trimEnd().split("\n").map((l) => `  ${l}`));
    lines.push("metrics (Prometheus text at /metrics):", ...[...metricsAddrs].map(([id, a]) => `  ${id.padEnd(width)}  http://${a}/metrics`));
    lines.push("Ctrl-C stops everything.");
    say(lines.join("\n"));
    // Unredacted on purpose: the dashboard's URL carries its token, for this terminal's user to open (as `blockx ui` prints it).
    if (ui) process.stderr.write(`blockx dev: dashboard: ${ui.url}\n`);
    // One machine-readable line on stdout, for scripts that start dev in the background.
    const metrics = Object.fromEntries(metricsAddrs);
    process.stdout.write(JSON.stringify({ msg: "dev ready", dir: layout.dir, envFile: layout.envFilePath, endpoints: Object.fromEntries(ready), metrics, ui: ui?.url ?? "" }) + "\n");
  };

  const onSignal = (signal: NodeJS.Signals) => apply({ type: "stopRequested", signal });
  for (const s of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(s, onSignal);
  apply({ type: "started" });
  const code = await finished;
  driver.stop();
  (ui as UiServer | null)?.stop();
  (uiClient as BlockxClient | null)?.close();
  for (const s of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.off(s, onSignal);

  await postgres?.server.destroy();
  // etcd's data and the children's scratch files are temporary whatever happens.
  rmSync(layout.etcdDataDir, { recursive: true, force: true });
  rmSync(layout.tmpDir, { recursive: true, force: true });
  rmSync(layout.proxySocketPath, { force: true });
  if (temporary && !config.keep) rmSync(layout.dir, { recursive: true, force: true });
  else say(`logs and tables kept in ${layout.dir}`);
  return code;
}
