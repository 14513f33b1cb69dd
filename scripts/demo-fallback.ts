/**
 * demo-fallback: what `blockx submit ... --watch` and `blockx table` do in the demo, for a
 * build that does not have those client commands yet (they arrive with the SDK). Reads the
 * client variables of blockx-dev.env. Usage: bun scripts/demo-fallback.ts FILE FROM..TO TABLE
 */
import * as grpc from "@grpc/grpc-js";
import { readFileSync } from "node:fs";
import { CoordinatorServiceClient, ReserveWorkerSlotRequest, type ReserveWorkerSlotResponse } from "../src/gen/coordinator/v1/coordinator";
import { SubmitTaskRequest, Task, TaskState, WatchTasksRequest, WorkerServiceClient, type TaskSnapshot } from "../src/gen/worker/v1/worker";
import { SqliteTableStore } from "../src/worker/writers/table-store";

const [file, blocks, table] = process.argv.slice(2);
const range = /^(\d+)\.\.(\d+)$/.exec(blocks ?? "");
if (!file || !range || !table) {
  console.error("usage: bun scripts/demo-fallback.ts FILE FROM..TO TABLE");
  process.exit(2);
}
const [fromBlock, toBlock] = [Number(range[1]), Number(range[2])];
const coordinator = (process.env.BLOCKX_COORDINATOR_ADDRS ?? "").split(",")[0]!;
const taskId = `demo-${Date.now()}`;

/** reserve retries as the client rules say (UNAVAILABLE at once, RESOURCE_EXHAUSTED backs off, ABORTED waits a slot TTL). */
async function reserve(): Promise<ReserveWorkerSlotResponse> {
  const client = new CoordinatorServiceClient(coordinator, grpc.credentials.createInsecure());
  try {
    for (let attempt = 0; ; attempt++) {
      const r = await new Promise<{ res?: ReserveWorkerSlotResponse; err?: grpc.ServiceError }>((resolve) =>
        client.reserveWorkerSlot(ReserveWorkerSlotRequest.fromPartial({ taskId }), new grpc.Metadata(), { deadline: Date.now() + 10_000 }, (err, res) => resolve({ res, err: err ?? undefined })),
      );
      if (r.res) return r.res;
      if (attempt > 100 || r.err?.code === grpc.status.INVALID_ARGUMENT) throw new Error(`ReserveWorkerSlot: ${r.err?.details}`);
      await Bun.sleep(r.err?.code === grpc.status.ABORTED ? 5_000 : r.err?.code === grpc.status.RESOURCE_EXHAUSTED ? 500 : 100 + Math.random() * 100);
    }
  } finally {
    client.close();
  }
}

const slot = await reserve();
const worker = new WorkerServiceClient(slot.workerAddr, grpc.credentials.createInsecure());
const task = Task.fromJSON({
  taskId,
  functionCallConfig: { function: { source: readFileSync(file, "utf8"), entry: "main" }, blockTable: { chain: "ethereum", fromBlock, toBlock } },
  outputs: [{ blockTableWrite: { table } }],
});
await new Promise<void>((resolve, reject) =>
  worker.submitTask(SubmitTaskRequest.fromPartial({ task, slotId: slot.slotId }), (err) => (err ? reject(new Error(`SubmitTask: ${err.details}`)) : resolve())),
);
const started = performance.now();
let last: TaskSnapshot | undefined;
let printed = 0;
await new Promise<void>((resolve, reject) => {
  const stream = worker.watchTasks(WatchTasksRequest.fromPartial({ taskIds: [taskId] }));
  stream.on("data", (s: TaskSnapshot) => {
    last = s;
    const now = performance.now();
    if (now - printed < 1_000 && s.state === TaskState.RUNNING) return;
    printed = now;
    const done = s.callsSucceeded + s.callsFailed;
    const rate = done / ((now - started) / 1000);
    const eta = rate > 0 ? (s.callsTotal - done) / rate : 0;
    console.log(`${TaskState[s.state]} ${done}/${s.callsTotal} calls  ${rate.toFixed(0)}/s  ETA ${eta.toFixed(0)} s`);
  });
  stream.on("end", resolve);
  stream.on("error", reject);
});
worker.close();
if (last?.state !== TaskState.SUCCEEDED) {
  console.error(`task ${taskId} ended ${last ? TaskState[last.state] : "without a snapshot"}: ${last?.error?.message ?? ""}`);
  process.exit(1);
}
console.log(`== first rows of ${table}`);
const store = new SqliteTableStore(process.env.TABLE_STORE_PATH!);
console.table(store.query(table, "ORDER BY block LIMIT 10").map(({ _chain, _scope_from, _scope_to, ...row }) => row));
store.close();
