import { describe, expect, test } from "bun:test";
import { envVar, intSchema, loadEnvConfig } from "../common/config/env-config";
import { parseCommandArgs } from "./args";
import { roleCommand } from "./command";
import { argSpecOf } from "./registry";

const vars = { port: envVar("DEMO_PORT", "8080", "an integer from 1 to 65535", "where to listen", intSchema(1, 65535)) };

describe("roleCommand", () => {
  test("a role starts with its configuration from the environment and its flags (flags win); a bad one starts nothing", async () => {
    const started: unknown[] = [];
    const role = roleCommand({
      name: "demo",
      summary: "a demo role",
      vars,
      loadConfig: (env, argv) => loadEnvConfig(vars, { ...env, DEMO_PORT: "1000" }, argv),
      start: async (config) => void started.push(config),
    });
    expect(argSpecOf(role)).toEqual({ flags: {}, vars, positionals: {} });
    await role.run(parseCommandArgs(["--demo-port=2000"], argSpecOf(role)));
    await role.run(parseCommandArgs([], argSpecOf(role)));
    expect(started).toEqual([{ port: 2000 }, { port: 1000 }]);
    await expect(role.run(parseCommandArgs(["--demo-port", "0"], argSpecOf(role)))).rejects.toThrow('DEMO_PORT: expected an integer from 1 to 65535, got "0"');
    expect(started).toHaveLength(2);
  });
});
