/**
 * The second baseline of the reservation benchmark: a bare grpc-js server that answers
 * coordinator.v1 ReserveWorkerSlot by making one RequestTaskSlot call to the Worker, with no
 * logic at all. It shows the two-hop floor of grpc-js on this runtime, against which the
 * Coordinator's own cost is read. Prints its port on stdout.
 */
import * as grpc from "@grpc/grpc-js";
import { CoordinatorServiceService, type CoordinatorServiceServer } from "../../src/gen/coordinator/v1/coordinator";
import { WorkerServiceClient } from "../../src/gen/worker/v1/worker";

const workerAddr = process.argv[2]!;
const worker = new WorkerServiceClient(workerAddr, grpc.credentials.createInsecure());
const server = new grpc.Server();
const impl: CoordinatorServiceServer = {
  reserveWorkerSlot: (call, callback) =>
    worker.requestTaskSlot({ taskId: call.request.taskId, ttlMs: 5000 }, (err, snapshot) =>
      err ? callback(err) : callback(null, { taskId: call.request.taskId, workerAddr, slotId: snapshot!.slotId }),
    ),
  getReservationOutcomes: (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED, details: "not in the bare baseline" }),
  reserveWorkerSlots: (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED, details: "the bare proxy answers ReserveWorkerSlot only" }),
};
server.addService(CoordinatorServiceService, impl);
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  console.log(port);
});
