import { FunctionCallConfig, Task } from "../../src/gen/worker/v1/worker";

/** blockTableTask: one call per block of `chain` from..to, the rows to `table` by block_table_write. */
export function blockTableTask(taskId: string, source: string, from: number, to: number, table: string, chain = "ethereum"): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source, entry: "main" },
      config: { $case: "blockTable", blockTable: { chain, fromBlock: from, toBlock: to } },
    }),
    outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table } } }],
  });
}
