import { parseExactJson } from "../../common/json/exact-json";
import { ErrorCode } from "../../common/error-code";
import type { Task } from "../../gen/worker/v1/worker";
import { blockBundleCalls, blockTableCalls, inputCalls, type BlockCallInput, type BundleCallInput, type CallPlan } from "./call-builder";
import type { FunctionSnapshot } from "../../runtime/functions/function-code-view";
import { inlineFunction, lookupFunction, sourceBytesOver, type ResolvedFunction } from "../../runtime/functions/function-lookup";
import { taskIdProblem } from "../../common/task-id";
import type { BlockScope } from "../../outputs/stores/table-store";
import type { OutputSpec } from "../../outputs/output";
import { blockTablesOf as tablesOfBlockOutputs, parseOutputs, writesTables as outputsWriteTables } from "../../outputs/output-kinds";
import { OutputSpecError } from "../../outputs/output";
import type { JsonValue } from "../../runtime/json/raw-json";
import type { WorkerProfile } from "./profile";
import { WorkerError } from "./worker-error";
import { MAX_TASK_TIMEOUT_MS } from "./config";
import { alignBundles, type ExistingScope } from "./scope-alignment";

/** TaskPlan is a validated Task: what the runner needs, nothing from the wire. */
export interface TaskPlan {
  readonly taskId: string;
  readonly timeoutMs: number;
  readonly fn: ResolvedFunction;
  /** The calls, built lazily (a block range is never materialised). */
  readonly calls: CallPlan<JsonValue>;
  /** The block scope of a call, for block tables; null for inputs. */
  readonly scopeOf: ((input: JsonValue) => BlockScope) | null;
  /** The task's outputs in its order; each becomes a writer plugin (src/outputs/output-kinds.ts). */
  readonly outputs: readonly OutputSpec[];
  /** The function snapshot pinned at activation: sub-calls by name resolve here. */
  readonly functions: FunctionSnapshot | null;
  /** A call's input as people name it in logs: `block 1234`, `blocks 100..199`, `input 3`. */
  readonly inputLabel: (input: JsonValue, index: number) => string;
  /** The task's blocks and how they are cut into calls (block_table: one per block); null for inputs. */
  readonly blocks: BlockRange | null;
}

/** BlockRange: a block task's range; `bundleSize` 1 for block_table. */
export interface BlockRange {
  readonly kind: "block" | "bundle";
  readonly chain: string;
  readonly fromBlock: number;
  readonly toBlock: number;
  readonly bundleSize: number;
}

/** blockTablesOf: the tables a plan's block_table_write outputs write (a rerun aligns with what they hold). */
export function blockTablesOf(plan: TaskPlan): string[] {
  return tablesOfBlockOutputs(plan.outputs);
}

/** tableOutputsOf: whether the plan writes any table (then its run is claimed and fenced). */
export function writesTables(plan: TaskPlan): boolean {
  return outputsWriteTables(plan.outputs);
}

/**
 * alignedPlan: the plan of a rerun over block tables that hold scopes wider than one block over
 * its range (`scopes`): a bundle task's bundles aligned so that none cuts them (scope-alignment.ts;
 * the range may widen to whole earlier scopes); a block task, whose calls are single blocks, is
 * refused naming the range to rerun on the bundle cluster. No scopes: the plan as it is.
 */
export function alignedPlan(plan: TaskPlan, scopes: readonly ExistingScope[]): TaskPlan {
  const b = plan.blocks;
  if (!b || scopes.length === 0) return plan;
  if (b.kind === "block") {
    const s = scopes[0]!;
    throw new WorkerError(
      ErrorCode.ErrInvalidArgument,
      `task.function_call_config.block_table: ${blockTablesOf(plan).join(", ")} on ${b.chain} holds rows written in bundles over these blocks (${scopes.length} of them, the first ${s.fromBlock}..${s.toBlock}); ` +
        "a block task writes block by block and would remove the rows of a bundle's other blocks with each one: rerun these blocks with a block_bundle task (its bundles align with the earlier ones), or write another table",
    );
  }
  const a = alignBundles(b.chain, b.fromBlock, b.toBlock, b.bundleSize, scopes);
  return { ...plan, calls: a.calls as unknown as CallPlan<JsonValue>, blocks: { ...b, fromBlock: a.fromBlock, toBlock: a.toBlock } };
}

/** Block ranges at most this long per task (10 million blocks: a full backfill of a chain segment). */
const MAX_BLOCK_RANGE = 100_000_000;

/** The bounds a plan is checked against (TASK_MAX_INPUTS, EXECUTOR_MAX_SOURCE_BYTES). */
export interface PlanLimits {
  /** Inputs of an inputs task. */
  readonly maxInputs: number;
  /** UTF-8 bytes of the function's source, inline or by name. */
  readonly maxSourceBytes: number;
}

export const DEFAULT_PLAN_LIMITS: PlanLimits = { maxInputs: 100_000, maxSourceBytes: 32 * 1024 * 1024 };

function invalid(message: string): WorkerError {
  return new WorkerError(ErrorCode.ErrInvalidArgument, message);
}

/**
 * planTask validates a SubmitTask's task for this Worker's profile and turns it into a plan.
 * Every rejection names the field (`task.function_call_config.inputs.inputs[3]: ...`).
 * A function by name is resolved in the snapshot given (the one current at activation).
 */
export function planTask(task: Task | undefined, profile: WorkerProfile, functions: FunctionSnapshot | null = null, limits: PlanLimits = DEFAULT_PLAN_LIMITS): TaskPlan {
  if (!task) throw invalid("task: required");
  const badId = taskIdProblem(task.taskId, "task.task_id");
  if (badId) throw invalid(badId);
  if (task.taskTimeoutMs > MAX_TASK_TIMEOUT_MS) throw invalid(`task.task_timeout_ms: at most ${MAX_TASK_TIMEOUT_MS} (8 h), got ${task.taskTimeoutMs}`);
  const fcc = task.functionCallConfig;
  if (!fcc) throw invalid("task.function_call_config: required");
  const f = fcc.function;
  if (!f) throw invalid("task.function_call_config.function: required");
  if (f.name !== "" && f.source !== "") throw invalid("task.function_call_config.function: give either name or source, not both");
  if (f.name === "" && f.source === "") throw invalid("task.function_call_config.function: name or source is required");
  const found = f.name !== "" ? lookupFunction(functions, f.name, f.entry, "Worker") : inlineFunction(f.source, f.entry, f.filename);
  if (!found.ok) {
    throw invalid(found.reason === "BAD_ENTRY" ? `task.function_call_config.function.${found.message}` : `task.function_call_config.function.name: ${found.message}`);
  }
  const fn: TaskPlan["fn"] = found.fn;
  const sourceBytes = sourceBytesOver(fn.source, limits.maxSourceBytes);
  if (sourceBytes !== null) {
    const what = f.name !== "" ? `task.function_call_config.function.name: function ${JSON.stringify(f.name)}` : "task.function_call_config.function.source";
    throw invalid(`${what} is ${sourceBytes} bytes of source, over the limit of ${limits.maxSourceBytes} (EXECUTOR_MAX_SOURCE_BYTES)`);
  }

  const config = fcc.config;
  if (!config) throw invalid("task.function_call_config: one of block_table, inputs, block_bundle is required");
  if (!profile.callConfigs.includes(config.$case)) {
    throw invalid(`task.function_call_config.${snake(config.$case)}: the ${profile.deployment} cluster does not run this call config`);
  }
  let calls: CallPlan<JsonValue>;
  let scopeOf: TaskPlan["scopeOf"] = null;
  let inputLabel: TaskPlan["inputLabel"] = (_input, index) => `input ${index}`;
  let blocks: BlockRange | null = null;
  switch (config.$case) {
    case "inputs":
      // Checked before any is parsed: each input becomes a value held until the task ends.
      if (config.inputs.inputs.length > limits.maxInputs) {
        throw invalid(`task.function_call_config.inputs.inputs: ${config.inputs.inputs.length} inputs, over the limit of ${limits.maxInputs} per task (TASK_MAX_INPUTS)`);
      }
      calls = inputCalls(
        config.inputs.inputs.map((raw, i) => {
          try {
            return parseExactJson(Buffer.from(raw).toString("utf8")) as JsonValue;
          } catch (e) {
            throw invalid(`task.function_call_config.inputs.inputs[${i}]: not JSON: ${(e as Error).message}`);
          }
        }),
      );
      break;
    case "blockTable": {
      const { chain, fromBlock, toBlock } = config.blockTable;
      checkRange("block_table", chain, fromBlock, toBlock);
      calls = blockTableCalls(chain, fromBlock, toBlock) as unknown as CallPlan<JsonValue>;
      blocks = { kind: "block", chain, fromBlock, toBlock, bundleSize: 1 };
      scopeOf = (input) => {
        const i = input as unknown as BlockCallInput;
        return { chain: i.chain, fromBlock: i.blockNumber, toBlock: i.blockNumber };
      };
      inputLabel = (input) => `block ${(input as unknown as BlockCallInput).blockNumber}`;
      break;
    }
    case "blockBundle": {
      const { chain, fromBlock, toBlock, bundleSize } = config.blockBundle;
      checkRange("block_bundle", chain, fromBlock, toBlock);
      if (bundleSize < 1 || bundleSize > 1_000_000) throw invalid(`task.function_call_config.block_bundle.bundle_size: from 1 to 1000000, got ${bundleSize}`);
      calls = blockBundleCalls(chain, fromBlock, toBlock, bundleSize) as unknown as CallPlan<JsonValue>;
      blocks = { kind: "bundle", chain, fromBlock, toBlock, bundleSize };
      scopeOf = (input) => input as unknown as BundleCallInput;
      inputLabel = (input) => {
        const b = input as unknown as BundleCallInput;
        return `blocks ${b.fromBlock}..${b.toBlock}`;
      };
      break;
    }
  }

  let outputs: OutputSpec[];
  try {
    outputs = parseOutputs(task.outputs, profile.outputs, profile.deployment, scopeOf !== null);
  } catch (e) {
    if (e instanceof OutputSpecError) throw invalid(e.message);
    throw e;
  }
  return { taskId: task.taskId, timeoutMs: task.taskTimeoutMs, fn, calls, scopeOf, outputs, functions, inputLabel, blocks };
}

function checkRange(field: string, chain: string, fromBlock: number, toBlock: number): void {
  if (chain === "") throw invalid(`task.function_call_config.${field}.chain: required`);
  if (toBlock < fromBlock) throw invalid(`task.function_call_config.${field}: to_block (${toBlock}) is before from_block (${fromBlock})`);
  if (toBlock - fromBlock + 1 > MAX_BLOCK_RANGE) throw invalid(`task.function_call_config.${field}: at most ${MAX_BLOCK_RANGE} blocks per task, got ${toBlock - fromBlock + 1}`);
}

function snake(s: string): string {
  return s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
