/** `blockx syncinvoker` on the command line: its help and a bad configuration. */
import { expect, test } from "bun:test";
import { expectHelpDefaults, runToExit as output } from "../support/cli-output";

test("blockx --help lists syncinvoker; syncinvoker --help lists its variables and the executor pool's", async () => {
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
