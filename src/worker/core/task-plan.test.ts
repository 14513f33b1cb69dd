import { describe, expect, test } from "bun:test";
import type { Task } from "../../gen/worker/v1/worker";
import { FunctionCodeView } from "../../runtime/functions/function-code-view";
import { blockWorkerProfile, bundleWorkerProfile } from "./profile";
import { planTask } from "./task-plan";
import { WorkerError } from "./worker-error";

const SOURCE = "def main(ctx, x):\n    return x\n";
type Config = NonNullable<NonNullable<Task["functionCallConfig"]>["config"]>;

function task(o: { id?: string; fn?: Partial<{ name: string; source: string; entry: string; filename: string }>; config?: Config; outputs?: Task["outputs"]; timeoutMs?: number } = {}): Task {
  return {
    taskId: o.id ?? "t",
    taskTimeoutMs: o.timeoutMs ?? 0,
    functionCallConfig: {
      function: { name: "", source: SOURCE, entry: "", filename: "", ...o.fn },
      config: o.config ?? { $case: "inputs", inputs: { inputs: [Buffer.from("1"), Buffer.from('{"a": null}')] } },
    },
    outputs: o.outputs ?? [{ handler: { $case: "returnValue", returnValue: {} } }],
  };
}

/** refusal: the message of the INVALID_ARGUMENT planTask throws (fails the test if it plans). */
function refusal(t: Task | undefined, profile = blockWorkerProfile, functions: FunctionCodeView | null = null): string {
  try {
    planTask(t, profile, functions?.current() ?? null);
  } catch (e) {
    expect(e).toBeInstanceOf(WorkerError);
    expect((e as WorkerError).code).toBe("INVALID_ARGUMENT");
    return (e as WorkerError).rawMessage;
  }
  throw new Error("planTask accepted the task");
}

const blockTable = (chain: string, fromBlock: number, toBlock: number): Config => ({ $case: "blockTable", blockTable: { chain, fromBlock, toBlock } });
const bundle = (fromBlock: number, toBlock: number, bundleSize: number): Config => ({ $case: "blockBundle", blockBundle: { chain: "ethereum", fromBlock, toBlock, bundleSize } });
const drain = (p: ReturnType<typeof planTask>) => {
  const s = p.calls.source();
  const out: unknown[] = [];
  for (let c = s.next(); c; c = s.next()) out.push(c.call);
  return out;
};

describe("planTask (pure: a Task in, a plan or a named refusal out)", () => {
  test("inputs become lazy calls in order; inline source is addressed by digest; entry defaults to main", () => {
    const p = planTask(task({ fn: { filename: "dir/my fn.py" } }), blockWorkerProfile);
    expect(p.calls.total).toBe(2);
    expect(drain(p)).toEqual([1, { a: null }]);
    expect(p.fn).toMatchObject({ source: SOURCE, entry: "main", name: "", filename: "myfn.py" });
    expect(p.fn.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(p.scopeOf).toBeNull();
    expect(p.outputs).toEqual([{ kind: "returnValue" }]);
    expect(p.inputLabel({ blockNumber: 5 }, 1)).toBe("input 1"); // a user's input is named by its index, whatever it holds
  });

  test("a block range is never materialised and each call's scope is its block; a bundle's scope is its range", () => {
    const p = planTask(task({ config: blockTable("ethereum", 5, 10_000_004) }), blockWorkerProfile);
    expect(p.calls.total).toBe(10_000_000);
    const first = p.calls.source().next()!.call;
    expect(p.scopeOf!(first)).toEqual({ chain: "ethereum", fromBlock: 5, toBlock: 5 });
    expect(p.inputLabel(first, 0)).toBe("block 5");
    const b = planTask(task({ config: bundle(10, 34, 10), outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table: "t", recordScopes: false } } }] }), bundleWorkerProfile);
    expect(drain(b).map((c) => b.scopeOf!(c as never))).toEqual([
      { chain: "ethereum", fromBlock: 10, toBlock: 19 },
      { chain: "ethereum", fromBlock: 20, toBlock: 29 },
      { chain: "ethereum", fromBlock: 30, toBlock: 34 },
    ]);
    expect(drain(b).map((c, i) => b.inputLabel(c as never, i))).toEqual(["blocks 10..19", "blocks 20..29", "blocks 30..34"]);
  });

  test("a function by name resolves in the snapshot given, pinned into the plan for its sub-calls", () => {
    const view = new FunctionCodeView();
    view.update(new Map([["stats", SOURCE]]));
    const pinned = view.current();
    const p = planTask(task({ fn: { source: "", name: "stats", entry: "run" } }), blockWorkerProfile, pinned);
    expect(p.fn).toMatchObject({ name: "stats", entry: "run", filename: "stats.py", digest: pinned.get("stats")!.digest });
    view.update(new Map([["stats", "def main(ctx, x):\n    return 2\n"]]));
    expect(p.functions).toBe(pinned);
    expect(p.functions!.get("stats")!.source).toBe(SOURCE);
  });

  test("every refusal names its field", () => {
    const view = new FunctionCodeView();
    view.update(new Map([["stats", SOURCE]]));
    expect(refusal(undefined)).toBe("task: required");
    expect(refusal(task({ id: "" }))).toBe("task.task_id is required");
    expect(refusal(task({ id: "x".repeat(257) }))).toContain("task.task_id: at most 256 characters");
    expect(refusal(task({ timeoutMs: 8 * 3600_000 + 1 }))).toContain("task.task_timeout_ms: at most");
    expect(refusal({ ...task(), functionCallConfig: undefined })).toBe("task.function_call_config: required");
    expect(refusal(task({ fn: { name: "stats" } }), blockWorkerProfile, view)).toBe("task.function_call_config.function: give either name or source, not both");
    expect(refusal(task({ fn: { source: "" } }))).toBe("task.function_call_config.function: name or source is required");
    expect(refusal(task({ fn: { entry: "1x" } }))).toBe('task.function_call_config.function.entry: not a Python identifier: "1x"');
    expect(refusal(task({ fn: { source: "", name: "nope" } }), blockWorkerProfile, view)).toBe('task.function_call_config.function.name: no function "nope" in FUNCTIONS_DIR (epoch 1 has: stats)');
    expect(refusal(task({ fn: { source: "", name: "stats" } }))).toContain("this Worker has no FUNCTIONS_DIR");
    expect(refusal(task({ config: { $case: "inputs", inputs: { inputs: [Buffer.from("1"), Buffer.from("{bad")] } } }))).toContain("task.function_call_config.inputs.inputs[1]: not JSON");
    expect(refusal(task({ config: blockTable("", 1, 2) }))).toBe("task.function_call_config.block_table.chain: required");
    expect(refusal(task({ config: blockTable("eth", 5, 4) }))).toBe("task.function_call_config.block_table: to_block (4) is before from_block (5)");
    expect(refusal(task({ config: blockTable("eth", 0, 100_000_000) }))).toContain("at most 100000000 blocks per task");
    expect(refusal(task({ config: bundle(1, 2, 0) }))).toBe("task.function_call_config.block_bundle.bundle_size: from 1 to 1000000, got 0");
    expect(refusal(task({ config: blockTable("eth", 1, 2) }), bundleWorkerProfile)).toBe("task.function_call_config.block_table: the bundle cluster does not run this call config");
    expect(refusal(task({ outputs: [] }))).toBe("task.outputs: at least one output is required");
    expect(refusal(task({ outputs: [{ handler: undefined }] }))).toContain("task.outputs[0]: one of");
    expect(refusal(task({ config: bundle(1, 2, 1) }), bundleWorkerProfile)).toBe("task.outputs[0].return_value: the bundle cluster does not run this writer");
    expect(refusal(task({ outputs: [{ handler: { $case: "normalTableWrite", normalTableWrite: { table: "a-b" } } }] }))).toBe('task.outputs[0].normal_table_write.table: an identifier (letters, digits, _; at most 63), got "a-b"');
    // The stores' own tables and the databases' catalogs are not user tables (issue 15).
    for (const table of ["_blockx_tables", "_BLOCKX_scope_spans", "sqlite_master", "pg_class"]) {
      expect(refusal(task({ outputs: [{ handler: { $case: "normalTableWrite", normalTableWrite: { table } } }] }))).toContain(`task.outputs[0].normal_table_write.table: names starting with`);
    }
    expect(refusal(task({ outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table: "t", recordScopes: false } } }] }))).toContain("task.outputs[0].block_table_write: needs a block_table or block_bundle call config");
  });

  test("the plan limits: inputs per task and source bytes, each refusal naming the count, the limit and its variable", () => {
    const limits = { maxInputs: 3, maxSourceBytes: 100 };
    const inputs = (n: number): Config => ({ $case: "inputs", inputs: { inputs: Array.from({ length: n }, () => Buffer.from("1")) } });
    const refused = (t: Task, functions: FunctionCodeView | null = null) => {
      try {
        planTask(t, blockWorkerProfile, functions?.current() ?? null, limits);
      } catch (e) {
        expect((e as WorkerError).code).toBe("INVALID_ARGUMENT");
        return (e as WorkerError).rawMessage;
      }
      throw new Error("planTask accepted the task");
    };
    expect(planTask(task({ config: inputs(3) }), blockWorkerProfile, null, limits).calls.total).toBe(3);
    expect(refused(task({ config: inputs(4) }))).toBe("task.function_call_config.inputs.inputs: 4 inputs, over the limit of 3 per task (TASK_MAX_INPUTS)");
    // Bytes, not characters: 40 three-byte characters are 120 bytes.
    expect(refused(task({ fn: { source: `${SOURCE}#${"€".repeat(40)}` } }))).toBe(
      "task.function_call_config.function.source is 152 bytes of source, over the limit of 100 (EXECUTOR_MAX_SOURCE_BYTES)",
    );
    const view = new FunctionCodeView();
    view.update(new Map([["huge", `${SOURCE}#${"x".repeat(100)}`]]));
    expect(refused(task({ fn: { source: "", name: "huge" } }), view)).toContain('task.function_call_config.function.name: function "huge" is 132 bytes of source, over the limit of 100');
  });
});
