/**
 * deploy/systemd: every unit passes Debian's `systemd-analyze verify` with no complaint at all
 * (an unknown key is only a warning there, so any output fails the test), follows the team's
 * operator rules, and its environment file names only variables its role declares. The units
 * are Type=notify, and every role is checked against the compiled binary: it really sends
 * READY=1 to $NOTIFY_SOCKET once it serves, and STOPPING=1 when SIGTERM starts the drain.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BLOCKX_BINARY, BlockxProcess } from "../support/blockx-process";
import { randomLanePrefix } from "../support/worker-double";

const UNITS_DIR = join(import.meta.dir, "..", "..", "deploy", "systemd");
const INSTALLED_PATH = "/usr/local/bin/blockx";
const units = readdirSync(UNITS_DIR).filter((f) => f.endsWith(".service"));
const work = mkdtempSync(join(tmpdir(), "blockx-systemd-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** directives reads `Key=value` lines of the [Service] section (later lines win, as in systemd). */
function serviceSection(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let section = "";
  for (const line of text.split("\n")) {
    const s = /^\[(\w+)\]$/.exec(line.trim());
    if (s) section = s[1]!;
    const kv = /^(\w+)=(.*)$/.exec(line);
    if (kv && section === "Service") out.set(kv[1]!, kv[2]!);
  }
  return out;
}

/** verify runs systemd-analyze verify on unit text whose ExecStart points at the built binary (verify needs it to exist). */
function verify(name: string, text: string): { code: number; output: string } {
  const dir = mkdtempSync(join(work, "unit-"));
  const path = join(dir, name);
  writeFileSync(path, text.replaceAll(INSTALLED_PATH, BLOCKX_BINARY));
  const r = Bun.spawnSync(["/usr/bin/systemd-analyze", "verify", "--man=no", path], { env: { ...process.env, SYSTEMD_LOG_COLOR: "0" } });
  return { code: r.exitCode, output: (r.stdout.toString() + r.stderr.toString()).trim() };
}

const builtCommands = new Set(
  Bun.spawnSync([BLOCKX_BINARY, "--help"])
    .stdout.toString()
    .split("\n")
    .flatMap((l) => (/^ {2}(\S+) /.exec(l) ? [/^ {2}(\S+) /.exec(l)![1]!] : [])),
);

function envFileVars(file: string): Map<string, string> {
  return new Map(
    readFileSync(join(UNITS_DIR, file), "utf8")
      .split("\n")
      .filter((l) => /^\w+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)] as [string, string]),
  );
}

function seconds(v: string): number {
  const m = /^(\d+)(s|min)?$/.exec(v);
  if (!m) throw new Error(`unexpected duration ${v}`);
  return Number(m[1]) * (m[2] === "min" ? 60 : 1);
}

describe("deploy/systemd units", () => {
  test("one unit per role, the proxy and the follower included", () => {
    expect(units.sort()).toEqual(
      ["bundle-coordinator", "bundle-worker", "coordinator", "follow", "proxy", "syncinvoker", "worker"].map((r) => `blockx-${r}.service`),
    );
  });

  for (const unit of units) {
    test(`${unit}: systemd-analyze verify prints nothing and exits 0`, () => {
      expect(verify(unit, readFileSync(join(UNITS_DIR, unit), "utf8"))).toEqual({ code: 0, output: "" });
    });

    test(`${unit}: environment file, restart policy, fd limit, stop timeout above the role's own shutdown deadline`, () => {
      const role = unit.replace(/^blockx-/, "").replace(/\.service$/, "");
      const s = serviceSection(readFileSync(join(UNITS_DIR, unit), "utf8"));
      expect(s.get("ExecStart")).toBe(`${INSTALLED_PATH} ${role}`);
      expect(s.get("EnvironmentFile")).toBe(`/etc/blockx/${role}.env`);
      expect(existsSync(join(UNITS_DIR, `${role}.env`))).toBe(true);
      expect(s.get("Restart")).toBe("on-failure");
      expect(Number(s.get("LimitNOFILE"))).toBeGreaterThanOrEqual(65536);
      expect(s.get("KillMode")).toBe("mixed");
      const env = envFileVars(`${role}.env`);
      const stopSec = seconds(s.get("TimeoutStopSec")!);
      if (role.endsWith("worker")) {
        // The Worker drains for WORKER_DRAIN_TIMEOUT_MS, then forces its own exit 10 s later.
        expect(stopSec).toBeGreaterThan(Number(env.get("WORKER_DRAIN_TIMEOUT_MS")) / 1000 + 10);
      } else if (role.endsWith("coordinator")) {
        expect(stopSec).toBeGreaterThan(Number(env.get("COORDINATOR_SHUTDOWN_GRACE_MS") ?? 5000) / 1000 + 5);
      }
      // Every role's binary really sends READY=1 (checked below).
      expect(s.get("Type")).toBe("notify");
      expect(s.get("NotifyAccess")).toBe("main");
    });

    test(`${unit}: every variable of its environment file is one its role declares`, () => {
      const role = unit.replace(/^blockx-/, "").replace(/\.service$/, "");
      // Every unit names a role the binary has; a missing role fails here rather than skipping the check.
      expect([...builtCommands]).toContain(role);
      const help = Bun.spawnSync([BLOCKX_BINARY, role, "--help"]).stdout.toString();
      const declared = new Set([...help.matchAll(/^ {2}([A-Z][A-Z0-9_]+) /gm)].map((m) => m[1]));
      expect([...envFileVars(`${role}.env`).keys()].filter((k) => !declared.has(k))).toEqual([]);
    });
  }

  test("the check fails on a broken unit: an unknown key, a bad value, a missing ExecStart binary", () => {
    const good = readFileSync(join(UNITS_DIR, "blockx-worker.service"), "utf8");
    const unknownKey = verify("blockx-worker.service", good.replace("Restart=on-failure", "Restrat=on-failure"));
    expect(unknownKey.output).toContain("Unknown key");
    const badValue = verify("blockx-worker.service", good.replace("LimitNOFILE=65536", "LimitNOFILE=lots"));
    expect(badValue.output).not.toBe("");
    const missing = verify("blockx-worker.service", good.replace(`${INSTALLED_PATH} worker`, "/nonexistent/blockx worker"));
    expect(missing.code).not.toBe(0);
  });
});

/** A real sd_notify receiver: Python binds the Unix datagram socket (Bun cannot) and prints each message. */
function notifyReceiver(path: string) {
  const script = "import socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\ns.bind(sys.argv[1])\nprint('bound',flush=True)\nwhile True:\n    print(s.recv(4096).decode(),flush=True)\n";
  const proc = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", "/usr/bin/python3", "-c", script, path], { stdout: "pipe" });
  const lines: string[] = [];
  void (async () => {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) {
      buf += dec.decode(chunk);
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) (lines.push(buf.slice(0, i)), (buf = buf.slice(i + 1)));
    }
  })();
  const waitFor = async (line: string) => {
    for (let i = 0; i < 400 && !lines.includes(line); i++) await Bun.sleep(50);
    return lines.includes(line);
  };
  return { proc, lines, waitFor };
}

describe("Type=notify is real", () => {
  for (const role of ["worker", "coordinator", "syncinvoker", "proxy"] as const) {
    test(`blockx ${role} sends READY=1 once serving and STOPPING=1 on SIGTERM`, async () => {
      const sock = join(mkdtempSync(join(work, "notify-")), "notify.sock");
      const rx = notifyReceiver(sock);
      expect(await rx.waitFor("bound")).toBe(true);
      const env: Record<string, string> = { ETCD_ENDPOINTS: process.env.BLOCKX_TEST_ETCD_ENDPOINT!, NOTIFY_SOCKET: sock };
      if (role === "worker") Object.assign(env, { WORKER_LISTEN: "127.0.0.1:0", WORKER_REGISTRY_PREFIX: randomLanePrefix("block"), EXECUTOR_COUNT: "1", TABLE_STORE_PATH: join(work, `${role}.sqlite`) });
      else if (role === "coordinator") Object.assign(env, { COORDINATOR_LISTEN: "127.0.0.1:0", COORDINATOR_REGISTRY_PREFIXES: randomLanePrefix("block") });
      else if (role === "syncinvoker") Object.assign(env, { SYNCINVOKER_LISTEN: "127.0.0.1:0", EXECUTOR_COUNT: "1" });
      else Object.assign(env, { PROXY_SOCKET_PATH: join(work, "proxy.sock") });
      const p = BlockxProcess.spawn([role], env);
      try {
        await p.grpcAddr();
        expect(await rx.waitFor("READY=1")).toBe(true);
        expect(rx.lines).not.toContain("STOPPING=1");
        expect(await p.stop("SIGTERM")).toBe(0);
        expect(await rx.waitFor("STOPPING=1")).toBe(true);
      } finally {
        await p.stop("SIGKILL");
        rx.proc.kill("SIGKILL");
      }
    }, 60_000);
  }
});
