import { describe, expect, test } from "bun:test";
import { ConfigError } from "../../common/config/env-config";
import {
  LegacyBlockWorkerRegistryPrefix,
  LegacyBundleWorkerRegistryPrefix,
  parseRegistryPrefix,
  ProdDefaultBlockWorkerRegistryPrefix,
  ProdDefaultBundleWorkerRegistryPrefix,
  TestDefaultBlockWorkerRegistryPrefix,
  TestDefaultBundleWorkerRegistryPrefix,
} from "../../common/registry/registry-prefix";
import { defaultEtcdWatcherConfig } from "../adapters/etcd-worker-watcher";
import { defaultHandlerConfig } from "../adapters/coordinator-server";
import { defaultCoordinatorCoreConfig } from "../core/config";
import { loadCoordinatorRuntimeConfigFromEnv, type CoordinatorRuntimeConfig } from "./config";
import { blockProfile, bundleProfile, validateRegistryPrefixes, type Profile } from "./profile";

type Env = Record<string, string | undefined>;

function load(env: Env = {}, argv: string[] = [], profile: Profile = blockProfile): CoordinatorRuntimeConfig {
  // Plaintext chosen unless a test says otherwise: TLS itself is src/common/tls's.
  return loadCoordinatorRuntimeConfigFromEnv(profile, { BLOCKX_INSECURE: "1", ...env }, argv);
}

/** problemsOf runs the loader and returns the ConfigError's problems; fails the test if it does not throw one. */
function problemsOf(env: Env, argv: string[] = [], profile: Profile = blockProfile): string[] {
  let thrown: unknown;
  try {
    load(env, argv, profile);
  } catch (e) {
    thrown = e;
  }
  expect(thrown).toBeInstanceOf(ConfigError);
  const err = thrown as ConfigError;
  // The message an operator sees is every problem, one per line.
  expect(err.message).toBe(err.problems.join("\n"));
  return err.problems;
}

describe("loadCoordinatorRuntimeConfigFromEnv defaults", () => {
  test("an empty environment gives the seed's defaults for the block profile", () => {
    const c = load();
    expect(c).toEqual({
      tls: { kind: "insecure" },
      etcd: { tls: null, auth: null },
      profile: blockProfile,
      listenAddr: ":8080",
      core: {
        heartbeatTimeoutMs: 10_000,
        watchGracePeriodMs: 10_000,
        slotTtlMs: 5_000,
        maxCandidates: 3,
        circuitBreakerThreshold: 3,
        circuitBreakerCooldownMs: 10_000,
        cpuRedLine: 0.9,
        memoryRedLine: 0.9,
        errorRateRedLine: 0.5,
      },
      handler: { maxTimeoutRetries: 1, workerRpcTimeoutMs: 3_000 },
      watcher: {
        endpoints: ["localhost:2379"],
        keyPrefixes: ["/blockx/workers/"],
        dialTimeoutMs: 5_000,
        retryDelayMs: 1_000,
      },
      shutdownGraceMs: 5_000,
      cpuProfile: "",
      trace: "",
      logLevel: "info",
      prometheusListenAddr: "",
      prometheusPath: "/metrics",
    });
  });

  test("the env defaults agree with the code defaults of core, handler and watcher", () => {
    const c = load();
    expect(c.core).toEqual(defaultCoordinatorCoreConfig());
    expect(c.handler).toEqual(defaultHandlerConfig());
    const w = defaultEtcdWatcherConfig();
    expect(c.watcher.endpoints).toEqual([...w.endpoints]);
    expect(c.watcher.dialTimeoutMs).toBe(w.dialTimeoutMs);
    expect(c.watcher.retryDelayMs).toBe(w.retryDelayMs);
  });

  test("the result and its parts are frozen", () => {
    const c = load();
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.core)).toBe(true);
    expect(Object.isFrozen(c.handler)).toBe(true);
    expect(Object.isFrozen(c.watcher)).toBe(true);
  });

  test("an unset variable (undefined) falls back to its default", () => {
    expect(load({ COORDINATOR_MAX_CANDIDATES: undefined }).core.maxCandidates).toBe(3);
  });
});

describe("each variable lands in its field", () => {
  const cases: [string, string, (c: CoordinatorRuntimeConfig) => unknown, unknown][] = [
    ["COORDINATOR_LISTEN", "127.0.0.1:9999", (c) => c.listenAddr, "127.0.0.1:9999"],
    ["COORDINATOR_LISTEN", "[::1]:7000", (c) => c.listenAddr, "[::1]:7000"],
    ["ETCD_ENDPOINTS", "10.0.0.1:2379, 10.0.0.2:2379,", (c) => c.watcher.endpoints, ["10.0.0.1:2379", "10.0.0.2:2379"]],
    ["COORDINATOR_WORKER_RPC_TIMEOUT_MS", "1234", (c) => c.handler.workerRpcTimeoutMs, 1234],
    ["COORDINATOR_ETCD_DIAL_TIMEOUT_MS", "777", (c) => c.watcher.dialTimeoutMs, 777],
    ["COORDINATOR_ETCD_WATCH_RETRY_DELAY_MS", "50", (c) => c.watcher.retryDelayMs, 50],
    ["COORDINATOR_HEARTBEAT_TIMEOUT_MS", "20000", (c) => c.core.heartbeatTimeoutMs, 20_000],
    ["COORDINATOR_WATCH_GRACE_PERIOD_MS", "2500", (c) => c.core.watchGracePeriodMs, 2_500],
    ["COORDINATOR_SLOT_TTL_MS", "8000", (c) => c.core.slotTtlMs, 8_000],
    ["COORDINATOR_MAX_CANDIDATES", " 5 ", (c) => c.core.maxCandidates, 5],
    ["COORDINATOR_MAX_TIMEOUT_RETRIES", "0", (c) => c.handler.maxTimeoutRetries, 0],
    ["COORDINATOR_MAX_TIMEOUT_RETRIES", "4", (c) => c.handler.maxTimeoutRetries, 4],
    ["COORDINATOR_CIRCUIT_BREAKER_THRESHOLD", "7", (c) => c.core.circuitBreakerThreshold, 7],
    ["COORDINATOR_CIRCUIT_BREAKER_COOLDOWN_MS", "15000", (c) => c.core.circuitBreakerCooldownMs, 15_000],
    ["COORDINATOR_CPU_RED_LINE", "0.75", (c) => c.core.cpuRedLine, 0.75],
    ["COORDINATOR_CPU_RED_LINE", "1", (c) => c.core.cpuRedLine, 1],
    ["COORDINATOR_MEMORY_RED_LINE", "1.0", (c) => c.core.memoryRedLine, 1],
    ["COORDINATOR_MEMORY_RED_LINE", ".5", (c) => c.core.memoryRedLine, 0.5],
    ["COORDINATOR_ERROR_RATE_RED_LINE", "0.01", (c) => c.core.errorRateRedLine, 0.01],
    ["COORDINATOR_ERROR_RATE_RED_LINE", "1", (c) => c.core.errorRateRedLine, 1],
  ];
  for (const [name, raw, field, want] of cases) {
    test(`${name}=${JSON.stringify(raw)}`, () => {
      expect(field(load({ [name]: raw }))).toEqual(want);
    });
  }
});

describe("invalid values give a ConfigError naming the variable, the rule and the value", () => {
  const cases: [string, string, string][] = [
    ["COORDINATOR_MAX_CANDIDATES", "abc", `COORDINATOR_MAX_CANDIDATES: expected an integer >= 1, got "abc"`],
    ["COORDINATOR_MAX_CANDIDATES", "0", `COORDINATOR_MAX_CANDIDATES: expected an integer >= 1, got "0"`],
    ["COORDINATOR_MAX_CANDIDATES", "2.5", `COORDINATOR_MAX_CANDIDATES: expected an integer >= 1, got "2.5"`],
    ["COORDINATOR_MAX_CANDIDATES", "", `COORDINATOR_MAX_CANDIDATES: expected an integer >= 1, got ""`],
    ["COORDINATOR_MAX_TIMEOUT_RETRIES", "-1", `COORDINATOR_MAX_TIMEOUT_RETRIES: expected an integer >= 0, got "-1"`],
    ["COORDINATOR_WORKER_RPC_TIMEOUT_MS", "0", `COORDINATOR_WORKER_RPC_TIMEOUT_MS: expected an integer from 1 to 86400000 (24 h), got "0"`],
    ["COORDINATOR_WORKER_RPC_TIMEOUT_MS", "3s", `COORDINATOR_WORKER_RPC_TIMEOUT_MS: expected an integer from 1 to 86400000 (24 h), got "3s"`],
    [
      "COORDINATOR_ETCD_WATCH_RETRY_DELAY_MS",
      "-5",
      `COORDINATOR_ETCD_WATCH_RETRY_DELAY_MS: expected an integer from 1 to 86400000 (24 h), got "-5"`,
    ],
    ["COORDINATOR_HEARTBEAT_TIMEOUT_MS", "x", `COORDINATOR_HEARTBEAT_TIMEOUT_MS: expected an integer from 1 to 86400000 (24 h), got "x"`],
    [
      "COORDINATOR_WATCH_GRACE_PERIOD_MS",
      "0",
      `COORDINATOR_WATCH_GRACE_PERIOD_MS: expected an integer from 1 to 86400000 and <= COORDINATOR_HEARTBEAT_TIMEOUT_MS, got "0"`,
    ],
    ["COORDINATOR_SLOT_TTL_MS", "1e3", `COORDINATOR_SLOT_TTL_MS: expected an integer from 1 to 86400000 (24 h), got "1e3"`],
    ["COORDINATOR_CIRCUIT_BREAKER_THRESHOLD", "0", `COORDINATOR_CIRCUIT_BREAKER_THRESHOLD: expected an integer >= 1, got "0"`],
    [
      "COORDINATOR_CIRCUIT_BREAKER_COOLDOWN_MS",
      "soon",
      `COORDINATOR_CIRCUIT_BREAKER_COOLDOWN_MS: expected an integer from 1 to 86400000 (24 h), got "soon"`,
    ],
    ["COORDINATOR_CPU_RED_LINE", "0", `COORDINATOR_CPU_RED_LINE: expected a number in (0, 1], got "0"`],
    ["COORDINATOR_CPU_RED_LINE", "1.5", `COORDINATOR_CPU_RED_LINE: expected a number in (0, 1], got "1.5"`],
    ["COORDINATOR_CPU_RED_LINE", "90%", `COORDINATOR_CPU_RED_LINE: expected a number in (0, 1], got "90%"`],
    ["COORDINATOR_MEMORY_RED_LINE", "0", `COORDINATOR_MEMORY_RED_LINE: expected a number in (0, 1], got "0"`],
    ["COORDINATOR_MEMORY_RED_LINE", "1.5", `COORDINATOR_MEMORY_RED_LINE: expected a number in (0, 1], got "1.5"`],
    ["COORDINATOR_MEMORY_RED_LINE", "NaN", `COORDINATOR_MEMORY_RED_LINE: expected a number in (0, 1], got "NaN"`],
    ["COORDINATOR_ERROR_RATE_RED_LINE", "0", `COORDINATOR_ERROR_RATE_RED_LINE: expected a number in (0, 1], got "0"`],
    ["COORDINATOR_ERROR_RATE_RED_LINE", "1.5", `COORDINATOR_ERROR_RATE_RED_LINE: expected a number in (0, 1], got "1.5"`],
    ["COORDINATOR_ERROR_RATE_RED_LINE", "-0.1", `COORDINATOR_ERROR_RATE_RED_LINE: expected a number in (0, 1], got "-0.1"`],
    ["COORDINATOR_LISTEN", "8080", `COORDINATOR_LISTEN: expected host:port or :port, got "8080"`],
    ["COORDINATOR_LISTEN", ":70000", `COORDINATOR_LISTEN: expected host:port or :port, got ":70000"`],
    ["ETCD_ENDPOINTS", " , ", `ETCD_ENDPOINTS: expected comma-separated host:port list, got " , "`],
    [
      "COORDINATOR_REGISTRY_PREFIXES",
      "",
      `COORDINATOR_REGISTRY_PREFIXES: expected comma-separated registry prefixes of block workers, got ""`,
    ],
  ];
  for (const [name, raw, message] of cases) {
    test(`${name}=${JSON.stringify(raw)}`, () => {
      expect(problemsOf({ [name]: raw })).toEqual([message]);
    });
  }

  // Durations are capped at 24 h, and the rule says so; counts have no upper cap.
  test("durations above 24 h are rejected with a rule that names the cap; large counts are accepted", () => {
    for (const [name, raw] of [
      ["COORDINATOR_ETCD_DIAL_TIMEOUT_MS", "86400001"],
      ["COORDINATOR_ETCD_WATCH_RETRY_DELAY_MS", "99999999999"],
    ] as const) {
      expect(problemsOf({ [name]: raw })).toEqual([`${name}: expected an integer from 1 to 86400000 (24 h), got "${raw}"`]);
    }
    const c = load({ COORDINATOR_MAX_CANDIDATES: "1001", COORDINATOR_MAX_TIMEOUT_RETRIES: "101" });
    expect(c.core.maxCandidates).toBe(1001);
    expect(c.handler.maxTimeoutRetries).toBe(101);
  });

  test("every bad variable is reported at once, not just the first", () => {
    const problems = problemsOf({ COORDINATOR_MAX_CANDIDATES: "abc", COORDINATOR_CPU_RED_LINE: "2", COORDINATOR_SLOT_TTL_MS: "0" });
    expect(problems).toHaveLength(3);
    expect(problems.some((p) => p.startsWith("COORDINATOR_MAX_CANDIDATES:"))).toBe(true);
    expect(problems.some((p) => p.startsWith("COORDINATOR_CPU_RED_LINE:"))).toBe(true);
    expect(problems.some((p) => p.startsWith("COORDINATOR_SLOT_TTL_MS:"))).toBe(true);
  });
});

describe("watch grace period versus heartbeat timeout", () => {
  test("a grace period longer than the heartbeat timeout is rejected, naming both", () => {
    expect(problemsOf({ COORDINATOR_WATCH_GRACE_PERIOD_MS: "10001" })).toEqual([
      `COORDINATOR_WATCH_GRACE_PERIOD_MS: expected <= COORDINATOR_HEARTBEAT_TIMEOUT_MS (10000), got "10001"`,
    ]);
    expect(problemsOf({ COORDINATOR_HEARTBEAT_TIMEOUT_MS: "1000" })).toEqual([
      `COORDINATOR_WATCH_GRACE_PERIOD_MS: expected <= COORDINATOR_HEARTBEAT_TIMEOUT_MS (1000), got "10000"`,
    ]);
  });

  test("a grace period equal to or shorter than the heartbeat timeout is accepted", () => {
    expect(load({ COORDINATOR_WATCH_GRACE_PERIOD_MS: "10000" }).core.watchGracePeriodMs).toBe(10_000);
    const c = load({ COORDINATOR_HEARTBEAT_TIMEOUT_MS: "3000", COORDINATOR_WATCH_GRACE_PERIOD_MS: "1500" });
    expect(c.core).toMatchObject({ heartbeatTimeoutMs: 3_000, watchGracePeriodMs: 1_500 });
  });
});

describe("command-line flags", () => {
  test("--name=value and --name value both override the environment", () => {
    const env = { COORDINATOR_MAX_CANDIDATES: "5" };
    expect(load(env).core.maxCandidates).toBe(5);
    expect(load(env, ["--coordinator-max-candidates=7"]).core.maxCandidates).toBe(7);
    expect(load(env, ["--coordinator-max-candidates", "7"]).core.maxCandidates).toBe(7);
  });

  test("several flags, including the non-COORDINATOR ones", () => {
    const c = load({}, ["--etcd-endpoints=a:1,b:2", "--coordinator-listen", ":9000", "--coordinator-cpu-red-line=1"]);
    expect(c.watcher.endpoints).toEqual(["a:1", "b:2"]);
    expect(c.listenAddr).toBe(":9000");
    expect(c.core.cpuRedLine).toBe(1);
  });

  test("a bad flag value is reported under the variable's name with the flag's value", () => {
    expect(problemsOf({ COORDINATOR_MAX_CANDIDATES: "5" }, ["--coordinator-max-candidates=abc"])).toEqual([
      `COORDINATOR_MAX_CANDIDATES: expected an integer >= 1, got "abc"`,
    ]);
  });

  test("a flag overriding a bad environment value makes the value good", () => {
    expect(load({ COORDINATOR_MAX_CANDIDATES: "abc" }, ["--coordinator-max-candidates=2"]).core.maxCandidates).toBe(2);
  });

  test("an unknown flag is rejected (a typo must not be ignored)", () => {
    expect(problemsOf({}, ["--coordinator-max-candidate=7"])).toEqual([
      `unknown argument "--coordinator-max-candidate=7" (see --help)`,
    ]);
    expect(problemsOf({}, ["stray"])).toEqual([`unknown argument "stray" (see --help)`]);
  });

  test("a flag without a value is rejected", () => {
    expect(problemsOf({}, ["--coordinator-max-candidates"])).toEqual(["--coordinator-max-candidates: expected a value"]);
  });

  test("flags take part in the cross-variable rule", () => {
    expect(problemsOf({}, ["--coordinator-watch-grace-period-ms=20000"])).toEqual([
      `COORDINATOR_WATCH_GRACE_PERIOD_MS: expected <= COORDINATOR_HEARTBEAT_TIMEOUT_MS (10000), got "20000"`,
    ]);
  });
});

describe("profiles and registry prefixes", () => {
  test("the block profile watches the legacy block registry by default", () => {
    expect(blockProfile.deployment).toBe("block");
    expect(blockProfile.service).toBe("coordinator.v1.CoordinatorService");
    expect(load({}, [], blockProfile).watcher.keyPrefixes).toEqual(["/blockx/workers/"]);
  });

  test("the bundle profile watches the legacy and the prod v2 bundle registries by default", () => {
    expect(bundleProfile.deployment).toBe("bundle");
    expect(bundleProfile.service).toBe("bundlecoordinator.v1.BundleCoordinatorService");
    expect(load({}, [], bundleProfile).watcher.keyPrefixes).toEqual([
      "/blockx/bundle-workers/",
      "/blockx/prod/lanes/default/bundle-workers/",
    ]);
  });

  test("COORDINATOR_REGISTRY_PREFIXES replaces the default list as a whole", () => {
    const c = load({ COORDINATOR_REGISTRY_PREFIXES: TestDefaultBundleWorkerRegistryPrefix }, [], bundleProfile);
    expect(c.watcher.keyPrefixes).toEqual(["/blockx/test/lanes/default/bundle-workers/"]);
    const two = load(
      { COORDINATOR_REGISTRY_PREFIXES: ` ${ProdDefaultBlockWorkerRegistryPrefix} , /blockx/test/lanes/canary-1/block-workers/ ` },
      [],
      blockProfile,
    );
    expect(two.watcher.keyPrefixes).toEqual(["/blockx/prod/lanes/default/block-workers/", "/blockx/test/lanes/canary-1/block-workers/"]);
  });

  test("the bundle coordinator rejects a block registry prefix", () => {
    expect(
      problemsOf({ COORDINATOR_REGISTRY_PREFIXES: `${LegacyBundleWorkerRegistryPrefix},${ProdDefaultBlockWorkerRegistryPrefix}` }, [], bundleProfile),
    ).toEqual([
      `COORDINATOR_REGISTRY_PREFIXES: prefix "/blockx/prod/lanes/default/block-workers/" names block workers, but this is the bundle coordinator`,
    ]);
  });

  test("the block coordinator rejects a bundle registry prefix", () => {
    expect(problemsOf({ COORDINATOR_REGISTRY_PREFIXES: LegacyBundleWorkerRegistryPrefix }, [], blockProfile)).toEqual([
      `COORDINATOR_REGISTRY_PREFIXES: prefix "/blockx/bundle-workers/" names bundle workers, but this is the block coordinator`,
    ]);
  });

  test("a prefix listed twice is rejected", () => {
    expect(
      problemsOf({ COORDINATOR_REGISTRY_PREFIXES: `${LegacyBlockWorkerRegistryPrefix},${LegacyBlockWorkerRegistryPrefix}` }),
    ).toEqual([`COORDINATOR_REGISTRY_PREFIXES: prefix "/blockx/workers/" is listed twice`]);
  });

  test("a malformed prefix is rejected with the accepted forms", () => {
    const problems = problemsOf({ COORDINATOR_REGISTRY_PREFIXES: "/blockx/workers" });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toStartWith(`COORDINATOR_REGISTRY_PREFIXES: unknown registry prefix "/blockx/workers": expected `);
    expect(problems[0]).toContain("/blockx/{prod|test}/lanes/{lane}/{block|bundle}-workers/");
  });

  test("validateRegistryPrefixes requires at least one prefix and reports every problem", () => {
    expect(validateRegistryPrefixes(blockProfile, [])).toEqual(["at least one registry prefix is required"]);
    expect(validateRegistryPrefixes(blockProfile, [LegacyBlockWorkerRegistryPrefix, TestDefaultBlockWorkerRegistryPrefix])).toEqual([]);
    expect(validateRegistryPrefixes(bundleProfile, [ProdDefaultBundleWorkerRegistryPrefix, "/nope/", LegacyBlockWorkerRegistryPrefix])).toHaveLength(2);
  });
});

describe("parseRegistryPrefix", () => {
  test("legacy prefixes of both kinds", () => {
    expect(parseRegistryPrefix("/blockx/workers/")).toEqual({ prefix: "/blockx/workers/", kind: "block", format: "legacy" });
    expect(parseRegistryPrefix("/blockx/bundle-workers/")).toEqual({
      prefix: "/blockx/bundle-workers/",
      kind: "bundle",
      format: "legacy",
    });
  });

  test("v2 prefixes in prod and test, both kinds, any well-formed lane", () => {
    expect(parseRegistryPrefix("/blockx/prod/lanes/default/block-workers/")).toEqual({
      prefix: "/blockx/prod/lanes/default/block-workers/",
      kind: "block",
      format: "v2",
      env: "prod",
      lane: "default",
    });
    expect(parseRegistryPrefix("/blockx/test/lanes/canary_2-b/bundle-workers/")).toEqual({
      prefix: "/blockx/test/lanes/canary_2-b/bundle-workers/",
      kind: "bundle",
      format: "v2",
      env: "test",
      lane: "canary_2-b",
    });
    expect(parseRegistryPrefix(ProdDefaultBundleWorkerRegistryPrefix)).toMatchObject({ kind: "bundle", env: "prod", lane: "default" });
    expect(parseRegistryPrefix(TestDefaultBlockWorkerRegistryPrefix)).toMatchObject({ kind: "block", env: "test", lane: "default" });
  });

  const bad: [string, string][] = [
    ["an unknown env", "/blockx/staging/lanes/default/block-workers/"],
    ["a missing trailing slash (v2)", "/blockx/prod/lanes/default/block-workers"],
    ["a missing trailing slash (legacy)", "/blockx/bundle-workers"],
    ["an unknown worker kind", "/blockx/prod/lanes/default/task-workers/"],
    ["an empty lane", "/blockx/prod/lanes//block-workers/"],
    ["a lane with a slash", "/blockx/prod/lanes/a/b/block-workers/"],
    ["a lane starting with a dash", "/blockx/prod/lanes/-a/block-workers/"],
    ["a missing leading slash", "blockx/workers/"],
    ["extra text after the prefix", "/blockx/workers/x/"],
    ["upper case", "/BLOCKX/workers/"],
    ["the empty string", ""],
  ];
  for (const [what, prefix] of bad) {
    test(`rejects ${what}: ${JSON.stringify(prefix)}`, () => {
      expect(() => parseRegistryPrefix(prefix)).toThrow(`unknown registry prefix ${JSON.stringify(prefix)}`);
    });
  }
});
