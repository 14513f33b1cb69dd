import { describe, expect, test } from "bun:test";
import { Task, type Output } from "../../gen/worker/v1/worker";
import { clusterFor, resubmitByDefault } from "./cluster-selection";

const blockTable = { $case: "blockTable" as const, blockTable: { chain: "ethereum", fromBlock: 1, toBlock: 2 } };
const blockBundle = { $case: "blockBundle" as const, blockBundle: { chain: "ethereum", fromBlock: 1, toBlock: 20, bundleSize: 10 } };
const inputs = { $case: "inputs" as const, inputs: { inputs: [Buffer.from("1")] } };
const btw: Output = { handler: { $case: "blockTableWrite", blockTableWrite: { table: "t", recordScopes: false } } };
const ntw: Output = { handler: { $case: "normalTableWrite", normalTableWrite: { table: "t" } } };
const rv: Output = { handler: { $case: "returnValue", returnValue: {} } };

const task = (config: typeof blockTable | typeof blockBundle | typeof inputs, outputs: Output[]) =>
  Task.fromPartial({ taskId: "t", functionCallConfig: { function: { source: "x" }, config }, outputs });

describe("clusterFor (runtime seed: cluster selection)", () => {
  test("block tables go to the block cluster, bundles to the bundle cluster", () => {
    expect(clusterFor(task(blockTable, [btw]))).toBe("block");
    expect(clusterFor(task(blockBundle, [btw]))).toBe("bundle");
  });
  test("inputs go to the bundle cluster by default, but to the block cluster with a ReturnValueHandler", () => {
    expect(clusterFor(task(inputs, [ntw]))).toBe("bundle");
    expect(clusterFor(task(inputs, [rv]))).toBe("block");
    expect(clusterFor(task(blockBundle, [rv]))).toBe("block");
  });
  test("an explicit cluster wins", () => {
    expect(clusterFor(task(inputs, [ntw]), "block")).toBe("block");
    expect(clusterFor(task(blockTable, [btw]), "bundle")).toBe("bundle");
  });
});

describe("resubmitByDefault", () => {
  test("idempotent outputs (block_table_write, return_value) are resubmitted; an append to a normal table is not", () => {
    expect(resubmitByDefault(task(blockTable, [btw]))).toBe(true);
    expect(resubmitByDefault(task(inputs, [rv]))).toBe(true);
    // Appends too: a rerun's call replaces the rows the same call of the lost run wrote.
    expect(resubmitByDefault(task(inputs, [ntw]))).toBe(true);
    expect(resubmitByDefault(task(blockTable, [btw, ntw]))).toBe(true);
  });
});
