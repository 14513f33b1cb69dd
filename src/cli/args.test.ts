import { describe, expect, test } from "bun:test";
import { envVar, intSchema, listSchema, loadEnvConfig } from "../common/config/env-config";
import { parseCommandArgs, intFlag, type ArgSpec } from "./args";
import { UsageError, type UsageErrorCode } from "./usage-error";

const vars = {
  addrs: envVar("BLOCKX_COORDINATOR_ADDRS", "127.0.0.1:8080", "a list", "Coordinators", listSchema()),
  timeout: envVar("BLOCKX_RPC_TIMEOUT_MS", "10000", "an integer >= 1", "deadline", intSchema(1)),
};
const spec: ArgSpec = { flags: { watch: "bool", table: "value", blocks: "value" }, vars, positionals: { optional: ["TASK.json"] } };

/** failure: the UsageError a command line raises, as code and message. */
function failure(argv: string[], s: ArgSpec = spec): { code: UsageErrorCode; message: string } {
  try {
    parseCommandArgs(argv, s);
  } catch (e) {
    if (e instanceof UsageError) return { code: e.code, message: e.message };
    throw e;
  }
  throw new Error(`no usage error for ${JSON.stringify(argv)}`);
}

describe("parseCommandArgs", () => {
  test("own flags (--a=b and --a b), a switch, positionals, and configuration flags normalised for the config loader", () => {
    const a = parseCommandArgs(["task.json", "--watch", "--table=t", "--blocks", "1..2", "--blockx-coordinator-addrs", "h:1", "--blockx-rpc-timeout-ms=5"], spec);
    expect(a.positional).toEqual(["task.json"]);
    expect([...a.flags]).toEqual([["watch", true], ["table", "t"], ["blocks", "1..2"]]);
    expect(a.configArgv).toEqual(["--blockx-coordinator-addrs=h:1", "--blockx-rpc-timeout-ms=5"]);
  });

  test("configuration flags win over the environment once loaded, and keep a value holding '=' or starting with '-'", () => {
    const a = parseCommandArgs(["--blockx-rpc-timeout-ms", "7", "--blockx-coordinator-addrs", "--odd=name"], spec);
    expect(a.configArgv).toEqual(["--blockx-rpc-timeout-ms=7", "--blockx-coordinator-addrs=--odd=name"]);
    expect(loadEnvConfig(vars, { BLOCKX_RPC_TIMEOUT_MS: "9" }, a.configArgv)).toEqual({ addrs: ["--odd=name"], timeout: 7 });
  });

  test("an unknown flag is a usage error naming it as written, whether or not it carries a value", () => {
    expect(failure(["--colour", "red"])).toEqual({ code: "UNKNOWN_FLAG", message: 'unknown argument "--colour" (see --help)' });
    expect(failure(["--colour=red"])).toEqual({ code: "UNKNOWN_FLAG", message: 'unknown argument "--colour=red" (see --help)' });
    // A flag of a variable the spec does not accept is unknown too; so are names of Object.prototype.
    expect(failure(["--table-store-path=x"]).code).toBe("UNKNOWN_FLAG");
    expect(failure(["--constructor"]).code).toBe("UNKNOWN_FLAG");
  });

  test("a value flag without its value is a usage error; one followed by another flag takes it as its value", () => {
    expect(failure(["--table"])).toEqual({ code: "MISSING_VALUE", message: "--table: expected a value" });
    expect(failure(["--blockx-rpc-timeout-ms"])).toEqual({ code: "MISSING_VALUE", message: "--blockx-rpc-timeout-ms: expected a value" });
    expect(parseCommandArgs(["--table", "--watch"], spec).flags.get("table")).toBe("--watch");
    expect(parseCommandArgs(["--table="], spec).flags.get("table")).toBe("");
  });

  test("a switch given a value is a usage error", () => {
    expect(failure(["--watch=1"])).toEqual({ code: "UNEXPECTED_VALUE", message: "--watch takes no value" });
    expect(failure(["--watch="])).toEqual({ code: "UNEXPECTED_VALUE", message: "--watch takes no value" });
  });

  test("positional counts: required ones named when missing, extra ones named, none at all when the spec has none", () => {
    const exec: ArgSpec = { flags: { entry: "value" }, positionals: { required: ["FILE"], optional: ["INPUT_JSON"] } };
    expect(failure([], exec)).toEqual({ code: "MISSING_ARGUMENT", message: "missing FILE (see --help)" });
    expect(failure(["--entry", "run"], exec).code).toBe("MISSING_ARGUMENT");
    expect(parseCommandArgs(["f.py"], exec).positional).toEqual(["f.py"]);
    expect(parseCommandArgs(["f.py", "41", "--entry", "run"], exec).positional).toEqual(["f.py", "41"]);
    expect(failure(["f.py", "1", "2", "3"], exec)).toEqual({ code: "UNEXPECTED_ARGUMENT", message: 'unexpected arguments "2" "3" (see --help)' });
    expect(failure(["a", "b"])).toEqual({ code: "UNEXPECTED_ARGUMENT", message: 'unexpected argument "b" (see --help)' });
    expect(failure(["stray"], { vars })).toEqual({ code: "UNEXPECTED_ARGUMENT", message: 'unexpected argument "stray" (see --help)' });
    const two: ArgSpec = { positionals: { required: ["A", "B"] } };
    expect(failure([], two).message).toBe("missing A B (see --help)");
    expect(failure(["a"], two).message).toBe("missing B (see --help)");
  });

  test("no short flags: an argument starting with one dash is positional as written (a negative INPUT_JSON); after -- everything is", () => {
    const exec: ArgSpec = { positionals: { required: ["FILE"], optional: ["INPUT_JSON"] } };
    expect(parseCommandArgs(["f.py", "-5"], exec).positional).toEqual(["f.py", "-5"]);
    expect(parseCommandArgs(["f.py", "-12"], exec).positional).toEqual(["f.py", "-12"]);
    expect(parseCommandArgs(["-", "-x=y"], exec).positional).toEqual(["-", "-x=y"]);
    expect(parseCommandArgs(["--", "--watch"], spec).positional).toEqual(["--watch"]);
    expect(parseCommandArgs(["--", "--watch"], spec).flags.size).toBe(0);
  });

  test("a flag given twice keeps its last value", () => {
    expect(parseCommandArgs(["--table", "a", "--table=b"], spec).flags.get("table")).toBe("b");
  });
});

describe("intFlag", () => {
  test("an integer at or above the minimum; anything else names the flag, the rule and the value", () => {
    const a = (v: string) => parseCommandArgs(["--limit", v], { flags: { limit: "value" } });
    expect(intFlag(a("0"), "limit", 0)).toBe(0);
    expect(intFlag(a("20"), "limit", 0)).toBe(20);
    expect(intFlag(parseCommandArgs([], { flags: { limit: "value" } }), "limit", 0)).toBeUndefined();
    expect(() => intFlag(a("0"), "limit", 1)).toThrow('--limit: expected an integer >= 1, got "0"');
    expect(() => intFlag(a("1.5"), "limit", 0)).toThrow(UsageError);
    expect(() => intFlag(a("99999999999999999999"), "limit", 0)).toThrow('--limit: expected an integer >= 0, got "99999999999999999999"');
  });
});
