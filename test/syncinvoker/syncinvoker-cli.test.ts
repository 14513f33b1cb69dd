/** `blockx syncinvoker` on the command line: its help and a bad configuration. */
import { expect, test } from "bun:test";
import { expectHelpDefaults, runToExit as output } from "../support/cli-output";

test("blockx --help lists syncinvoker; syncinvoker --help lists its variables, the IO subsystem's and the executor pool's", async () => {
  expect((await output(["--help"])).out).toContain("  syncinvoker ");
  const { code, out } = await output(["syncinvoker", "--help"]);
  expect(code).toBe(0);
  const defaults: [string, string][] = [
    ["SYNCINVOKER_LISTEN", ":9070"],
    ["SYNCINVOKER_QUEUE_MAX", "256"],
    ["SYNCINVOKER_CALLS_PER_EXECUTOR", "1"],
    ["SYNCINVOKER_DEFAULT_TIMEOUT_MS", "5000"],
    ["SYNCINVOKER_SHUTDOWN_GRACE_MS", "10000"],
    ["FUNCTIONS_DIR", "(empty)"],
    ["CHAINS_CONFIG", "(empty)"],
    ["IO_CACHE_MAX_BYTES", "268435456"],
    ["IO_SINGLEFLIGHT", "true"],
    ["IO_TASK_WINDOW", "64"],
    ["IO_FINALITY_DEPTH", "64"],
    ["IO_ADMISSION_QUEUE", "128"],
    ["EXECUTOR_COUNT", "8"],
    ["EXECUTOR_CALL_BUDGET_MS", "5000"],
    ["BLOCKX_PROMETHEUS_LISTEN_ADDR", "(empty)"],
  ];
  expectHelpDefaults(out, defaults);
});

test("an invalid variable stops the process with exit code 2, naming the variable, the rule and the value", async () => {
  const { code, out } = await output(["syncinvoker"], { SYNCINVOKER_QUEUE_MAX: "lots", SYNCINVOKER_DEFAULT_TIMEOUT_MS: "0" });
  expect(code).toBe(2);
  expect(out).toContain('SYNCINVOKER_QUEUE_MAX: expected an integer from 0 to 1000000, got "lots"');
  expect(out).toContain("SYNCINVOKER_DEFAULT_TIMEOUT_MS: expected an integer from 1 to 600000");
});

test("a bad CHAINS_CONFIG or IO_* stops the process with exit code 2, naming the field", async () => {
  const { code, out } = await output(["syncinvoker"], {
    CHAINS_CONFIG: JSON.stringify({ chains: { dev: { source: "rpc", endpoints: ["localhost:8545"] } } }),
    IO_ADMISSION_MIN_LIMIT: "64",
    IO_ADMISSION_INITIAL_LIMIT: "8",
  });
  expect(code).toBe(2);
  expect(out).toContain("CHAINS_CONFIG: chains.dev.endpoints[0]: expected an http:// or https:// URL");
  expect(out).toContain("IO_ADMISSION_*: expected IO_ADMISSION_MIN_LIMIT <= IO_ADMISSION_INITIAL_LIMIT <= IO_ADMISSION_MAX_LIMIT");
});

test("the IO config is always read-only, whatever the variables say", async () => {
  const { loadSyncInvokerConfig } = await import("../../src/syncinvoker/app/config");
  const c = loadSyncInvokerConfig({ BLOCKX_INSECURE: "1", IO_CACHE_MAX_BYTES: "1024", CHAINS_CONFIG: '{"chains": {"eth": {"source": "localtestservice", "finalityDepth": 3}}}' });
  expect(c.io).toMatchObject({ readOnly: true, cacheMaxBytes: 1024 });
  expect(c.chains.chains).toEqual({ eth: { source: "localtestservice", finalityDepth: 3 } });
});

test("the Sync Invoker spreads calls over every executor unless EXECUTOR_SPREAD says otherwise: admission gives each executor its own calls", async () => {
  const { loadSyncInvokerConfig } = await import("../../src/syncinvoker/app/config");
  expect(loadSyncInvokerConfig({ BLOCKX_INSECURE: "1", EXECUTOR_COUNT: "6" }).pool).toMatchObject({ executorCount: 6, spread: 6 });
  expect(loadSyncInvokerConfig({ BLOCKX_INSECURE: "1", EXECUTOR_COUNT: "6", EXECUTOR_SPREAD: "2" }).pool).toMatchObject({ executorCount: 6, spread: 2 });
});
