/**
 * A bare Sync Invoker for the baselines of bench/syncinvoker/invoke.ts: the same
 * syncinvoker.v1.SyncInvokerService and messages, with none of the invoker's logic (no
 * validation, admission, metrics). Without arguments it answers Invoke at once with a fixed
 * result (the bare gRPC round trip); with `--executors N` it runs the request's source through
 * its own ExecutorPool.execute first (gRPC plus an executor, the invoker's topology).
 * Prints its port on stdout.
 */
import * as grpc from "@grpc/grpc-js";
import { parseArgs } from "node:util";
import { GRPC_SERVER_OPTIONS } from "../../src/common/grpc/grpc-server";
import { silentLogger } from "../../src/common/logging/logger";
import { InvokeResponse, SyncInvokerServiceService, type SyncInvokerServiceServer } from "../../src/gen/syncinvoker/v1/sync_invoker";
import { ExecutorPool } from "../../src/runtime/executor/executor-pool";
import { defaultExecutorPoolConfig } from "../../src/runtime/executor/executor-pool-config";
import type { JsonValue } from "../../src/runtime/json/raw-json";

const { values } = parseArgs({ options: { executors: { type: "string", default: "0" } } });
const executors = Number(values.executors);
const pool = executors > 0 ? await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: executors }), silentLogger(), { waitForAll: true }) : null;

const server = new grpc.Server(GRPC_SERVER_OPTIONS);
let seq = 0;
const durations = { queueMs: 0, cpuMs: 0, ioMs: 0, totalMs: 0.001 };
const impl: Partial<SyncInvokerServiceServer> = {
  invoke: (call, callback) => {
    const callId = `bare-${++seq}`;
    if (!pool) return callback(null, InvokeResponse.create({ callId, result: call.request.args, durations }));
    const fn = call.request.function!;
    void pool.execute({ callId, fn: { source: fn.source, entry: fn.entry || "main" }, args: JSON.parse(call.request.args.toString()) as JsonValue }).then((o) =>
      callback(null, InvokeResponse.create({ callId, result: Buffer.from(JSON.stringify(o.ok ? o.value : null)), durations })),
    );
  },
};
server.addService(SyncInvokerServiceService, impl as SyncInvokerServiceServer);
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  console.log(port);
});
