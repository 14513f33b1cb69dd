/**
 * A minimal Worker for the reservation benchmark: worker.v1.WorkerService.RequestTaskSlot
 * answering at once with a slot (no state). It doubles as the bare grpc-js unary echo used as
 * the baseline. Prints its port on stdout.
 */
import * as grpc from "@grpc/grpc-js";
import { TaskSnapshot, TaskState, WorkerServiceService, type WorkerServiceServer } from "../../src/gen/worker/v1/worker";
import { GRPC_SERVER_OPTIONS } from "../../src/common/grpc/grpc-server";

const server = new grpc.Server(GRPC_SERVER_OPTIONS);
let addr = "";
const impl: Partial<WorkerServiceServer> = {
  requestTaskSlot: (call, callback) =>
    callback(null, TaskSnapshot.create({ taskId: call.request.taskId, slotId: `s-${call.request.taskId}`, workerAddr: addr, state: TaskState.ALLOCATED })),
};
server.addService(WorkerServiceService, impl as WorkerServiceServer);
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  addr = `127.0.0.1:${port}`;
  console.log(port);
});
