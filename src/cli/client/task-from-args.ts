import { parseExactJson } from "../../common/json/exact-json";
import { existsSync, readFileSync } from "node:fs";
import { basename } from "node:path";
import { z } from "zod";
import { FunctionRef, Task, type Output } from "../../gen/worker/v1/worker";
import { UsageError } from "../usage-error";
import { flagValue, intFlag, type ParsedArgs } from "../args";

/**
 * functionRefFrom: `--function FILE|NAME` is a file when one exists at that path (its source
 * is sent inline), otherwise a name from the Workers' Function Code View.
 */
export function functionRefFrom(spec: string, entry: string): FunctionRef {
  if (existsSync(spec)) return FunctionRef.fromPartial({ source: readFileSync(spec, "utf8"), entry, filename: basename(spec) });
  if (/[/\\]|\.py$/.test(spec)) throw new UsageError(`--function ${spec}: no such file (a name from FUNCTIONS_DIR has no slash and no .py)`);
  return FunctionRef.fromPartial({ name: spec, entry });
}

/** readJsonArg reads `JSON` or `@file` (a file holding JSON). */
export function readJsonArg(flag: string, text: string): unknown {
  const raw = text.startsWith("@") ? readFileOr(flag, text.slice(1)) : text;
  try {
    return parseExactJson(raw) as unknown;
  } catch (e) {
    throw new UsageError(`--${flag}: not JSON: ${(e as Error).message}`);
  }
}

function readFileOr(flag: string, path: string): string {
  if (!existsSync(path)) throw new UsageError(`--${flag} @${path}: no such file`);
  return readFileSync(path, "utf8");
}

const TaskFileSchema = z.looseObject({}).refine((o) => typeof o === "object" && !Array.isArray(o));

/**
 * readTaskFile reads a JSON task in the proto3 JSON mapping of worker.v1.Task (lowerCamel or
 * snake_case field names). One convenience: an input that is not a string is taken as the JSON
 * value itself (proto3 JSON would want base64 of its encoding, which a string input still is).
 */
export function readTaskFile(path: string): Task {
  return taskFromJson(readJsonArg("task file", `@${path}`), `${path}: a task file holds one JSON object (worker.v1.Task)`);
}

/** A --many file holds at most this many tasks (one per line). */
export const MAX_TASKS_PER_FILE = 100_000;

/**
 * readTaskLines reads a JSON Lines file of tasks (`blockx submit --many`): one task per non-empty
 * line, each in readTaskFile's format. A bad line is named by its number.
 */
export function readTaskLines(path: string): Task[] {
  if (!existsSync(path)) throw new UsageError(`--many ${path}: no such file`);
  const lines = readFileSync(path, "utf8").split("\n");
  const tasks: Task[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === "") return;
    if (tasks.length === MAX_TASKS_PER_FILE) throw new UsageError(`--many ${path}: at most ${MAX_TASKS_PER_FILE} tasks in one file (split it)`);
    let raw: unknown;
    try {
      raw = JSON.parse(line) as unknown;
    } catch (e) {
      throw new UsageError(`--many ${path}:${i + 1}: not JSON: ${(e as Error).message}`);
    }
    tasks.push(taskFromJson(raw, `--many ${path}:${i + 1}: each line holds one JSON object (worker.v1.Task)`));
  });
  if (tasks.length === 0) throw new UsageError(`--many ${path}: no task in the file`);
  return tasks;
}

function taskFromJson(raw: unknown, notAnObject: string): Task {
  const parsed = TaskFileSchema.safeParse(raw);
  if (!parsed.success) throw new UsageError(notAnObject);
  const obj = structuredClone(parsed.data) as Record<string, Record<string, Record<string, unknown>>>;
  const fcc = obj.functionCallConfig ?? obj.function_call_config;
  const inputs = fcc?.inputs?.inputs;
  if (Array.isArray(inputs)) {
    fcc!.inputs!.inputs = inputs.map((v: unknown) => (typeof v === "string" ? v : Buffer.from(JSON.stringify(v)).toString("base64")));
  }
  return Task.fromJSON(obj);
}

function parseBlocks(text: string): { from: number; to: number } {
  const m = /^(\d+)\.\.(\d+)$/.exec(text) ?? /^(\d+)$/.exec(text);
  if (!m) throw new UsageError(`--blocks: expected A..B (e.g. 100..199), got ${JSON.stringify(text)}`);
  const from = Number(m[1]);
  const to = Number(m[2] ?? m[1]);
  if (to < from) throw new UsageError(`--blocks ${text}: the range ends before it starts`);
  return { from, to };
}

/** taskFromArgs builds a Task from a task file and/or flags; anything missing is a usage error. */
export function taskFromArgs(args: ParsedArgs, file: string | undefined): Task {
  const task = file ? readTaskFile(file) : Task.fromPartial({});
  const fcc = task.functionCallConfig ?? { function: undefined, config: undefined };
  const entry = flagValue(args, "entry") ?? (fcc.function?.entry || "main");
  const fn = flagValue(args, "function");
  if (fn !== undefined) fcc.function = functionRefFrom(fn, entry);
  else if (fcc.function) fcc.function = { ...fcc.function, entry: fcc.function.entry || entry };
  if (!fcc.function || (!fcc.function.name && !fcc.function.source)) throw new UsageError("no function: give --function FILE|NAME (or a task file)");

  const blocks = flagValue(args, "blocks");
  const inputs = flagValue(args, "inputs");
  if (blocks !== undefined && inputs !== undefined) throw new UsageError("--blocks and --inputs exclude each other");
  const chain = flagValue(args, "chain") ?? "ethereum";
  const bundleSize = intFlag(args, "bundle-size", 1);
  if (blocks !== undefined) {
    const { from, to } = parseBlocks(blocks);
    fcc.config =
      bundleSize !== undefined
        ? { $case: "blockBundle", blockBundle: { chain, fromBlock: from, toBlock: to, bundleSize } }
        : { $case: "blockTable", blockTable: { chain, fromBlock: from, toBlock: to } };
  } else if (inputs !== undefined) {
    const values = readJsonArg("inputs", inputs);
    if (!Array.isArray(values)) throw new UsageError("--inputs: expected a JSON array (one call per element)");
    fcc.config = { $case: "inputs", inputs: { inputs: values.map((v) => Buffer.from(JSON.stringify(v))) } };
  } else if (bundleSize !== undefined) {
    throw new UsageError("--bundle-size needs --blocks");
  }
  if (!fcc.config) throw new UsageError("no calls: give --blocks A..B or --inputs JSON (or a task file)");
  task.functionCallConfig = fcc;

  const outputs: Output[] = [];
  const table = flagValue(args, "table");
  if (table !== undefined) {
    const append = args.flags.has("append") || fcc.config.$case === "inputs";
    outputs.push(append ? { handler: { $case: "normalTableWrite", normalTableWrite: { table } } } : { handler: { $case: "blockTableWrite", blockTableWrite: { table, recordScopes: false } } });
  }
  if (args.flags.has("return")) outputs.push({ handler: { $case: "returnValue", returnValue: {} } });
  if (outputs.length > 0) task.outputs = outputs;
  if (task.outputs.length === 0) throw new UsageError("no output: give --table NAME and/or --return (or a task file)");

  task.taskId = flagValue(args, "task-id") ?? (task.taskId || `cli-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`);
  const timeout = intFlag(args, "task-timeout-ms", 0);
  if (timeout !== undefined) task.taskTimeoutMs = timeout;
  return task;
}
