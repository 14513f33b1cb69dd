import { Database } from "bun:sqlite";
import { accessSync, constants, existsSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, resolve } from "node:path";
import { measureEtcdClockOffset } from "../common/clock/etcd-clock";
import type { EtcdTls } from "../common/etcd/etcd-access";
import { etcdFetch } from "../common/etcd/etcd-http";
import { splitListenAddr } from "../common/net/listen-addr";
import { executorPythonPath } from "../runtime/executor/executor-assets";
import { resolveIsolation, resolvePython } from "../runtime/executor/isolation";
import { fail, pass, type CheckResult, type DoctorCheck, type DoctorContext } from "./doctor-check";

/** The fewest open files a role should be allowed (the units set LimitNOFILE=65536). */
export const MIN_OPEN_FILES = 8192;

function run(argv: string[]): { ok: boolean; out: string } {
  try {
    const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
    return { ok: r.exitCode === 0, out: (r.stdout.toString() + r.stderr.toString()).trim() };
  } catch (e) {
    return { ok: false, out: (e as Error).message };
  }
}

const isRoot = () => process.getuid?.() === 0;

const python: DoctorCheck = {
  id: "python",
  title: "Python 3.10+ for the executors (EXECUTOR_PYTHON)",
  appliesTo: (ctx) => ctx.pool !== null,
  async run(ctx) {
    try {
      const path = resolvePython(ctx.pool!.python);
      const v = run([path, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"]);
      return pass(`EXECUTOR_PYTHON ${ctx.pool!.python} is ${path}, Python ${v.out}`);
    } catch (e) {
      return fail((e as Error).message, "install Python 3.10 or newer (Debian 12: apt-get install python3) and set EXECUTOR_PYTHON to it");
    }
  },
};

const isolation: DoctorCheck = {
  id: "isolation",
  title: "setsid, setpriv and unshare fence executors in (as root: own network namespace, EXECUTOR_USER)",
  appliesTo: (ctx) => ctx.pool !== null,
  async run(ctx) {
    const iso = resolveIsolation(ctx.pool!);
    if (iso.warnings.length > 0) {
      const fix = isRoot()
        ? "install util-linux (setpriv, unshare, setsid), allow network namespaces, and set EXECUTOR_USER to an existing unprivileged user"
        : "run the role (and blockx doctor) as root, as its systemd unit does: only root can give executors their own network namespace and user";
      return fail(iso.warnings.join("; "), fix);
    }
    const who = iso.runAs ? `as ${iso.runAs.name} (uid ${iso.runAs.uid})` : "as this user";
    return pass(`executors run ${who}${iso.networkNamespace ? " in their own network namespace" : ""}: ${iso.argvPrefix.join(" ")}`);
  },
};

const sandbox: DoctorCheck = {
  id: "user-namespaces",
  title: "user namespaces (what a sandbox builds on)",
  appliesTo: (ctx) => ctx.pool !== null,
  async run() {
    const userns = run(["unshare", "--user", "--map-root-user", "--", "true"]);
    const bwrap = run(["bwrap", "--version"]);
    const bw = bwrap.ok ? `${bwrap.out}` : "bwrap not installed";
    if (!userns.ok) {
      return fail(
        `unshare --user fails: ${userns.out || "not allowed"} (${bw})`,
        "enable user namespaces: sysctl -w user.max_user_namespaces=15000 (and kernel.unprivileged_userns_clone=1 where that exists)",
      );
    }
    return pass(`user namespaces available; ${bw}`);
  },
};

const executorCode: DoctorCheck = {
  id: "executor-code",
  title: "the executor code folder is readable by EXECUTOR_USER (BLOCKX_CACHE_DIR)",
  appliesTo: (ctx) => ctx.pool !== null,
  async run(ctx) {
    const iso = resolveIsolation(ctx.pool!);
    try {
      const dir = await executorPythonPath(ctx.pool!.cacheDir, iso.runAs);
      return pass(`${dir} is readable by ${iso.runAs ? `${iso.runAs.name} (uid ${iso.runAs.uid})` : "this user"}`);
    } catch (e) {
      return fail(
        (e as Error).message,
        "set BLOCKX_CACHE_DIR to a folder EXECUTOR_USER can reach (e.g. /var/cache/blockx, mode 0755 on it and every folder above), or chmod o+x the folder named",
      );
    }
  },
};

async function etcdHealth(endpoint: string, tls: EtcdTls | null): Promise<string | null> {
  try {
    const res = await etcdFetch(endpoint, "/health", tls, 2_000);
    const body = await res.text();
    return res.ok && /"health":\s*"true"/.test(body) ? null : `HTTP ${res.status} ${body.slice(0, 200)}`;
  } catch (e) {
    return (e as Error).message;
  }
}

// The etcd TLS files and user are checked when the configuration loads (the "config" check).
const etcd: DoctorCheck = {
  id: "etcd",
  title: "every etcd endpoint answers (ETCD_ENDPOINTS)",
  appliesTo: (ctx) => ctx.etcdEndpoints.length > 0,
  async run(ctx) {
    const problems = (await Promise.all(ctx.etcdEndpoints.map(async (e) => [e, await etcdHealth(e, ctx.etcd.tls)] as const))).filter(([, p]) => p !== null);
    if (problems.length > 0) {
      return fail(
        problems.map(([e, p]) => `${e}: ${p}`).join("; "),
        "start etcd or fix ETCD_ENDPOINTS (host:port of etcd's client URL); check that a firewall lets this host reach the client port, and ETCD_TLS_* when etcd asks for TLS or a client certificate",
      );
    }
    return pass(`${ctx.etcdEndpoints.join(", ")} healthy`);
  },
};

const clock: DoctorCheck = {
  id: "clock",
  title: "this host's clock is within CLOCK_MAX_OFFSET_MS of etcd's",
  appliesTo: (ctx) => ctx.etcdEndpoints.length > 0,
  async run(ctx) {
    let lastError = "";
    for (const endpoint of ctx.etcdEndpoints) {
      try {
        const d = await measureEtcdClockOffset(endpoint, { timeoutMs: 2_000, testOffsetMs: ctx.clock.testOffsetMs, samples: 5, maxOffsetMs: ctx.clock.maxOffsetMs, tls: ctx.etcd.tls });
        const e = d.estimate!;
        const what = `offset ${Math.round(e.offsetMs)} ms ± ${Math.round(e.uncertaintyMs)} ms from etcd ${endpoint} (tolerance ±${ctx.clock.maxOffsetMs} ms)`;
        if (d.state === "SKEWED") {
          return fail(`this host's clock is skewed: ${what}`, "synchronise the clock (chrony or systemd-timesyncd: timedatectl set-ntp true) on this host and on the etcd hosts");
        }
        return pass(what);
      } catch (e) {
        lastError = `${endpoint}: ${(e as Error).message}`;
      }
    }
    return fail(`cannot measure the clock offset: no etcd endpoint answered (${lastError})`, "make etcd reachable (see the etcd check), then run doctor again");
  },
};

function portFree(addr: string): Promise<string | null> {
  const { host, port } = splitListenAddr(addr);
  return new Promise((done) => {
    const srv = createServer();
    srv.once("error", (e: NodeJS.ErrnoException) => done(e.code === "EADDRINUSE" ? "in use by another process" : `${e.code ?? ""} ${e.message}`.trim()));
    srv.listen({ host, port, exclusive: true }, () => srv.close(() => done(null)));
  });
}

const listen: DoctorCheck = {
  id: "listen",
  title: "the addresses the role listens on are free",
  appliesTo: (ctx) => ctx.listenAddrs.length > 0 || ctx.socketPath !== null,
  async run(ctx) {
    const problems: string[] = [];
    const free: string[] = [];
    for (const { variable, addr } of ctx.listenAddrs) {
      const p = await portFree(addr);
      if (p) problems.push(`${variable}=${addr}: ${p}`);
      else free.push(`${variable}=${addr}`);
    }
    if (ctx.socketPath) {
      const dir = dirname(resolve(ctx.socketPath));
      try {
        accessSync(dir, constants.W_OK | constants.X_OK);
        free.push(`PROXY_SOCKET_PATH=${ctx.socketPath} (folder writable)`);
      } catch {
        problems.push(`PROXY_SOCKET_PATH=${ctx.socketPath}: folder ${dir} is missing or not writable`);
      }
    }
    if (problems.length > 0) {
      return fail(problems.join("; "), "stop what holds the address (ss -ltnp shows it; a running blockx unit of this role holds its own), or choose another address");
    }
    return pass(`${free.join(", ")} free`);
  },
};

async function chainIdOf(url: string, timeoutMs: number): Promise<string> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = (await res.json().catch(() => null)) as { result?: unknown; error?: { message?: string } } | null;
  if (!res.ok || body === null) throw new Error(`HTTP ${res.status}`);
  if (typeof body.result !== "string") throw new Error(`no result: ${body.error?.message ?? JSON.stringify(body).slice(0, 200)}`);
  return body.result;
}

/** redact: a node URL's path and query often hold an API key; show scheme, host and port. */
const redact = (url: string) => {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname !== "/" || u.search ? "/..." : ""}`;
};

const chains: DoctorCheck = {
  id: "chains",
  title: "CHAINS_CONFIG parses and every node answers eth_chainId",
  appliesTo: (ctx) => ctx.pool !== null,
  async run(ctx) {
    const all = ctx.chains?.chains;
    if (!all) {
      return pass(
        ctx.localTestChain
          ? "CHAINS_CONFIG is empty: every chain is the synthetic local test chain (LOCALTESTSERVICE_ENABLED=true)"
          : "CHAINS_CONFIG is empty and the synthetic local test chain is off: functions read no chain",
      );
    }
    const found: string[] = [];
    const problems: string[] = [];
    for (const [name, chain] of Object.entries(all)) {
      if (chain.source !== "rpc") {
        found.push(`${name}: local test chain`);
        continue;
      }
      for (const url of chain.endpoints) {
        try {
          const id = await chainIdOf(url, chain.timeoutMs);
          if (chain.chainId !== undefined && Number(BigInt(id)) !== chain.chainId) problems.push(`${name} ${redact(url)}: eth_chainId ${id}, but chainId is ${chain.chainId}`);
          else found.push(`${name} ${redact(url)}: chain id ${Number(BigInt(id))}`);
        } catch (e) {
          problems.push(`${name} ${redact(url)}: ${(e as Error).message}`);
        }
      }
    }
    if (problems.length > 0) return fail(problems.join("; "), "fix the node URL in CHAINS_CONFIG or start the node; a chainId must be the node's");
    return pass(found.join("; "));
  },
};

const tableStore: DoctorCheck = {
  id: "table-store",
  title: "the table store (TABLE_STORE_PATH) opens for writing",
  appliesTo: (ctx) => ctx.tableStorePath !== null,
  async run(ctx) {
    const path = resolve(ctx.tableStorePath!);
    const existed = existsSync(path);
    try {
      if (!existed && !statSync(dirname(path)).isDirectory()) throw new Error(`${dirname(path)} is not a folder`);
      const db = new Database(path, { create: true });
      try {
        db.exec("PRAGMA busy_timeout = 2000");
        db.exec("BEGIN IMMEDIATE"); // takes the write lock: fails on a read-only file or folder
        db.exec("ROLLBACK");
      } finally {
        db.close();
        // Leave no trace of the check: the role creates its store itself.
        if (!existed) for (const f of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`]) rmSync(f, { force: true });
      }
      return pass(`${path} ${existed ? "is writable" : "can be created"}`);
    } catch (e) {
      return fail(
        `${path}: ${(e as Error).message}`,
        "make the file and its folder writable by the role's user (the Worker unit keeps it in /var/lib/blockx-worker), or point TABLE_STORE_PATH elsewhere",
      );
    }
  },
};

/** openFilesLimit: the soft RLIMIT_NOFILE of this process (what the role would get from the same shell or unit). */
export function openFilesLimit(): number {
  const line = readFileSync("/proc/self/limits", "utf8")
    .split("\n")
    .find((l) => l.startsWith("Max open files"));
  const soft = line?.split(/\s{2,}/)[1] ?? "0";
  return soft === "unlimited" ? Infinity : Number(soft);
}

const openFiles: DoctorCheck = {
  id: "open-files",
  title: `open files limit of at least ${MIN_OPEN_FILES}`,
  appliesTo: () => true,
  async run() {
    const n = openFilesLimit();
    if (n < MIN_OPEN_FILES) {
      return fail(`the open files limit is ${n}`, "LimitNOFILE=65536 in the unit (the shipped units set it); in a shell: ulimit -n 65536");
    }
    return pass(`the open files limit is ${n}`);
  },
};

/** doctorChecks: every check, in the order they are printed. */
export const doctorChecks: readonly DoctorCheck[] = [python, isolation, sandbox, executorCode, etcd, clock, listen, chains, tableStore, openFiles];

/** runChecks runs the checks that apply to the context's role, one after another. */
export async function runChecks(ctx: DoctorContext, checks: readonly DoctorCheck[] = doctorChecks): Promise<({ id: string; title: string } & CheckResult)[]> {
  const out: ({ id: string; title: string } & CheckResult)[] = [];
  for (const c of checks.filter((c) => c.appliesTo(ctx))) {
    let r: CheckResult;
    try {
      r = await c.run(ctx);
    } catch (e) {
      r = fail(`the check itself failed: ${(e as Error).message}`, "report this as a bug of blockx doctor");
    }
    out.push({ id: c.id, title: c.title, ...r });
  }
  return out;
}
