/** The compiled binary's command line: help, version, and the CPU profile switch. */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlockxProcess } from "../support/blockx-process";
import { expectHelpDefaults, runToExit as output } from "../support/cli-output";

describe("blockx command line", () => {
  test("blockx --help lists the subcommands", async () => {
    const { code, out } = await output(["--help"]);
    expect(code).toBe(0);
    for (const c of ["coordinator", "bundle-coordinator", "version"]) expect(out).toContain(`  ${c} `);
  });

  test("coordinator --help lists every variable of the seed with its default", async () => {
    const { code, out } = await output(["coordinator", "--help"]);
    expect(code).toBe(0);
    const defaults: [string, string][] = [
      ["COORDINATOR_LISTEN", ":8080"],
      ["ETCD_ENDPOINTS", "localhost:2379"],
      ["COORDINATOR_REGISTRY_PREFIXES", "/blockx/workers/"],
      ["COORDINATOR_WORKER_RPC_TIMEOUT_MS", "3000"],
      ["COORDINATOR_ETCD_DIAL_TIMEOUT_MS", "5000"],
      ["COORDINATOR_ETCD_WATCH_RETRY_DELAY_MS", "1000"],
      ["COORDINATOR_HEARTBEAT_TIMEOUT_MS", "10000"],
      ["COORDINATOR_WATCH_GRACE_PERIOD_MS", "10000"],
      ["COORDINATOR_SLOT_TTL_MS", "5000"],
      ["COORDINATOR_MAX_CANDIDATES", "3"],
      ["COORDINATOR_MAX_TIMEOUT_RETRIES", "1"],
      ["COORDINATOR_CIRCUIT_BREAKER_THRESHOLD", "3"],
      ["COORDINATOR_CIRCUIT_BREAKER_COOLDOWN_MS", "10000"],
      ["COORDINATOR_CPU_RED_LINE", "0.90"],
      ["COORDINATOR_MEMORY_RED_LINE", "0.90"],
      ["COORDINATOR_ERROR_RATE_RED_LINE", "0.50"],
      ["COORDINATOR_CPU_PROFILE", "(empty)"],
      ["BLOCKX_PROMETHEUS_LISTEN_ADDR", "(empty)"],
      ["BLOCKX_PROMETHEUS_PATH", "/metrics"],
    ];
    expectHelpDefaults(out, defaults);
  });

  test("bundle-coordinator --help shows the bundle profile's prefixes", async () => {
    const { out } = await output(["bundle-coordinator", "--help"]);
    expect(out).toMatch(/COORDINATOR_REGISTRY_PREFIXES +default \/blockx\/bundle-workers\/,\/blockx\/prod\/lanes\/default\/bundle-workers\/\n/);
  });

  test("version prints version, commit, build date, target, Bun version and the sources' digest", async () => {
    const { code, out } = await output(["version"]);
    expect(code).toBe(0);
    expect(out).toMatch(
      /^blockx \d+\.\d+\.\d+ \(commit (?:[0-9a-f]+|unknown), built \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, linux-(?:x64|arm64), bun \d+\.\d+\.\d+, sources [0-9a-f]{16}\)/,
    );
  });

  test("an unknown command exits 2 and says so", async () => {
    const { code, out } = await output(["frobnicate"]);
    expect(code).toBe(2);
    expect(out).toContain('unknown command "frobnicate"');
  });

  test("COORDINATOR_CPU_PROFILE writes a CPU profile of the whole run on SIGTERM", async () => {
    const dir = mkdtempSync(join(tmpdir(), "blockx-prof-"));
    const file = join(dir, "coordinator.cpuprofile");
    const p = BlockxProcess.spawn(["coordinator"], {
      COORDINATOR_LISTEN: "127.0.0.1:0",
      ETCD_ENDPOINTS: process.env.BLOCKX_TEST_ETCD_ENDPOINT!,
      COORDINATOR_REGISTRY_PREFIXES: "/blockx/test/lanes/prof/block-workers/",
      COORDINATOR_CPU_PROFILE: file,
    });
    await p.grpcAddr();
    expect(await p.stop("SIGTERM")).toBe(0);
    expect(existsSync(file)).toBe(true);
    const profile = JSON.parse(readFileSync(file, "utf8")) as { nodes?: unknown[] };
    expect(Array.isArray(profile.nodes) && profile.nodes.length > 0).toBe(true);
    rmSync(dir, { recursive: true, force: true });
  });
});
