import { describe, expect, test } from "bun:test";
import { envVar, stringSchema } from "../common/config/env-config";
import type { Command } from "./command";
import { argSpecOf, CommandRegistry } from "./registry";

const vars = { path: envVar("TABLE_STORE_PATH", "t.sqlite", "a path", "the table store", stringSchema()) };
const command = (over: Partial<Command> = {}): Command => ({ name: "table", summary: "print rows", vars, async run() {}, ...over });

describe("CommandRegistry", () => {
  test("lists commands in registration order and finds them by name", () => {
    const r = new CommandRegistry([command({ name: "b" }), command({ name: "a" })]).register(command({ name: "c" }));
    expect(r.list().map((c) => c.name)).toEqual(["b", "a", "c"]);
    expect(r.get("a")?.name).toBe("a");
    expect(r.get("zz")).toBeUndefined();
  });

  test("refuses a definition that could not work, naming the command and the problem", () => {
    const refused = (c: Command, before: Command[] = []) => () => new CommandRegistry(before).register(c);
    expect(refused(command(), [command()])).toThrow('command "table": registered twice');
    expect(refused(command({ name: "Table" }))).toThrow("kebab-case");
    expect(refused(command({ name: "help" }))).toThrow("the name is the dispatcher's");
    expect(refused(command({ flags: { "table-store-path": "value" } }))).toThrow("flag --table-store-path shadows the configuration variable");
    expect(refused(command({ vars: {}, acceptedVars: vars, flags: { "table-store-path": "bool" } }))).toThrow("shadows");
    expect(refused(command({ flags: { help: "bool" } }))).toThrow("--help is the dispatcher's");
    expect(refused(command({ flags: { "--limit": "value" } }))).toThrow("flag ----limit: a flag name is kebab-case");
    expect(refused(command({ positionals: { required: [""] } }))).toThrow("a positional argument needs a name");
  });

  test("a command's line accepts its own flags, its listed and its accepted variables, and its positionals", () => {
    const extra = { addrs: envVar("BLOCKX_COORDINATOR_ADDRS", "h:1", "a list", "Coordinators", stringSchema()) };
    const spec = argSpecOf(command({ flags: { limit: "value" }, acceptedVars: extra, positionals: { required: ["NAME"] } }));
    expect(spec.flags).toEqual({ limit: "value" });
    expect(Object.values(spec.vars ?? {}).map((v) => v.name)).toEqual(["TABLE_STORE_PATH", "BLOCKX_COORDINATOR_ADDRS"]);
    expect(spec.positionals).toEqual({ required: ["NAME"] });
    expect(argSpecOf(command())).toEqual({ flags: {}, vars, positionals: {} });
  });
});
