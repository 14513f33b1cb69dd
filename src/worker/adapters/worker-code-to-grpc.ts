import { errorCodeToGRPC } from "../../common/error-code-to-grpc";

/**
 * workerCodeToGRPC: where a Worker error becomes a gRPC status (the seed's name for the shared
 * table). It is the inverse of the Coordinator's grpcErrToSlotError for every code a Worker
 * answers RequestTaskSlot with: NO_SLOT <-> RESOURCE_EXHAUSTED (backpressure: next Worker, no
 * penalty), INVALID_ARGUMENT <-> INVALID_ARGUMENT, SLOT_NOT_FOUND <-> NOT_FOUND, SLOT_CONFLICT <->
 * FAILED_PRECONDITION; INTERNAL stays uncertain, since a Worker that failed inside
 * RequestTaskSlot may have allocated first (worker-code-to-grpc.test.ts).
 */
export const workerCodeToGRPC = errorCodeToGRPC;
