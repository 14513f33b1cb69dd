import { describe, expect, test } from "bun:test";
import { parseCommandArgs } from "../../cli/args";
import { argSpecOf } from "../../cli/registry";
import { devCommand, devConfigFrom } from "./dev-command";

const dev = devCommand(() => []);
const config = (argv: string[], env: Record<string, string> = {}) => devConfigFrom(parseCommandArgs(argv, argSpecOf(dev)), env);

describe("blockx dev's command line", () => {
  test("a bare --keep keeps the dev folder, as DEV_KEEP=true or --dev-keep=true do; the default removes it", () => {
    expect(config([]).keep).toBe(false);
    expect(config(["--keep"]).keep).toBe(true);
    expect(config([], { DEV_KEEP: "true" }).keep).toBe(true);
    expect(config(["--dev-keep=true"]).keep).toBe(true);
    expect(config(["--dev-keep", "false"], { DEV_KEEP: "true" }).keep).toBe(false);
  });

  test("a bare --postgres starts a private Postgres, as DEV_POSTGRES=true does; TABLE_STORE_URL passes through", () => {
    expect(config([]).postgres).toBe(false);
    expect(config(["--postgres"]).postgres).toBe(true);
    expect(config([], { DEV_POSTGRES: "true" }).postgres).toBe(true);
    expect(() => config(["--postgres=yes"])).toThrow("--postgres takes no value");
    expect(config([], { TABLE_STORE_URL: " postgres://db.example/blockx " }).tableStoreUrl).toBe("postgres://db.example/blockx");
  });

  test("its variables are flags that win over the environment; --keep takes no value", () => {
    expect(config(["--dev-workers=3"], { DEV_WORKERS: "1" }).workers).toBe(3);
    expect(() => config(["--keep=yes"])).toThrow("--keep takes no value");
    expect(() => config(["--dev-workers=many"])).toThrow('DEV_WORKERS: expected an integer from 0 to 64, got "many"');
  });
});
