import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseCommandArgs } from "../args";
import { TASK_FLAGS } from "./task-flags";
import { taskFromArgs } from "./task-from-args";

const dir = mkdtempSync(join(tmpdir(), "blockx-args-"));
const fnFile = join(dir, "f.py");
writeFileSync(fnFile, "def main(ctx, x):\n    return x\n");
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const args = (...argv: string[]) => parseCommandArgs(argv, { flags: { ...TASK_FLAGS, watch: "bool" } });

describe("taskFromArgs", () => {
  test("--blocks + --table: a block_table config writing a block table, the file's source inline", () => {
    const t = taskFromArgs(args("--function", fnFile, "--blocks", "100..199", "--table", "stats", "--task-id", "t1"), undefined);
    expect(t.taskId).toBe("t1");
    expect(t.functionCallConfig?.function).toMatchObject({ source: "def main(ctx, x):\n    return x\n", entry: "main", name: "" });
    expect(t.functionCallConfig?.config).toEqual({ $case: "blockTable", blockTable: { chain: "ethereum", fromBlock: 100, toBlock: 199 } });
    expect(t.outputs).toEqual([{ handler: { $case: "blockTableWrite", blockTableWrite: { table: "stats", recordScopes: false } } }]);
  });
  test("--bundle-size makes a bundle config; a name without slash is a function from FUNCTIONS_DIR", () => {
    const t = taskFromArgs(args("--function", "block_stats", "--entry", "run", "--blocks", "0..99", "--bundle-size", "10", "--chain", "local", "--table", "s"), undefined);
    expect(t.functionCallConfig?.function).toMatchObject({ name: "block_stats", entry: "run", source: "" });
    expect(t.functionCallConfig?.config).toEqual({ $case: "blockBundle", blockBundle: { chain: "local", fromBlock: 0, toBlock: 99, bundleSize: 10 } });
    expect(t.taskId).toMatch(/^cli-/);
  });
  test("--inputs JSON with --table appends to a normal table; --return adds a return value", () => {
    const t = taskFromArgs(args("--function", fnFile, "--inputs", '[1, {"a": 2}]', "--table", "events", "--return"), undefined);
    expect(t.functionCallConfig?.config).toEqual({ $case: "inputs", inputs: { inputs: [Buffer.from("1"), Buffer.from('{"a":2}')] } });
    expect(t.outputs.map((o) => o.handler?.$case)).toEqual(["normalTableWrite", "returnValue"]);
  });
  test("a task file in proto3 JSON (snake_case too), inputs as plain JSON values or base64 strings; flags override", () => {
    const file = join(dir, "task.json");
    writeFileSync(file, JSON.stringify({ task_id: "from-file", function_call_config: { function: { name: "f" }, inputs: { inputs: [{ n: 1 }, Buffer.from("2").toString("base64")] } }, outputs: [{ return_value: {} }], task_timeout_ms: 5000 }));
    const t = taskFromArgs(args(), file);
    expect(t).toMatchObject({ taskId: "from-file", taskTimeoutMs: 5000 });
    expect(t.functionCallConfig?.function).toMatchObject({ name: "f", entry: "main" });
    expect(t.functionCallConfig?.config).toEqual({ $case: "inputs", inputs: { inputs: [Buffer.from('{"n":1}'), Buffer.from("2")] } });
    expect(t.outputs).toEqual([{ handler: { $case: "returnValue", returnValue: {} } }]);
    expect(taskFromArgs(args("--task-id", "other", "--blocks", "5..6", "--table", "x"), file)).toMatchObject({ taskId: "other", outputs: [{ handler: { $case: "blockTableWrite" } }] });
  });
  test("what is missing or contradictory is named", () => {
    expect(() => taskFromArgs(args("--blocks", "1..2", "--table", "t"), undefined)).toThrow("no function");
    expect(() => taskFromArgs(args("--function", fnFile, "--table", "t"), undefined)).toThrow("no calls");
    expect(() => taskFromArgs(args("--function", fnFile, "--blocks", "1..2"), undefined)).toThrow("no output");
    expect(() => taskFromArgs(args("--function", fnFile, "--blocks", "1..2", "--inputs", "[1]", "--return"), undefined)).toThrow("--blocks and --inputs exclude each other");
    expect(() => taskFromArgs(args("--function", fnFile, "--blocks", "a..b", "--return"), undefined)).toThrow("--blocks: expected A..B");
    expect(() => taskFromArgs(args("--function", fnFile, "--inputs", "{}", "--return"), undefined)).toThrow("expected a JSON array");
    expect(() => taskFromArgs(args("--function", "missing/f.py", "--inputs", "[1]", "--return"), undefined)).toThrow("no such file");
  });
});
