import * as grpc from "@grpc/grpc-js";
import { ErrorCode } from "../../common/error-code";

/**
 * workerCodeToGRPC is the one place where a Worker ErrorCode becomes a gRPC status. It is the
 * inverse of the Coordinator's grpcErrToSlotError for every code a Worker answers
 * RequestTaskSlot with (worker-code-to-grpc.test.ts holds the two together):
 * NO_SLOT <-> RESOURCE_EXHAUSTED (backpressure: the Coordinator tries the next Worker, no
 * penalty), INVALID_ARGUMENT <-> INVALID_ARGUMENT, SLOT_NOT_FOUND <-> NOT_FOUND,
 * SLOT_CONFLICT <-> FAILED_PRECONDITION. INTERNAL stays uncertain on the Coordinator's side:
 * a Worker that failed inside RequestTaskSlot may have allocated first.
 */
export function workerCodeToGRPC(code: ErrorCode): grpc.status {
  switch (code) {
    case ErrorCode.ErrInvalidArgument:
      return grpc.status.INVALID_ARGUMENT;
    case ErrorCode.ErrNoSlot:
    case ErrorCode.ErrNoExecutableSlot:
      return grpc.status.RESOURCE_EXHAUSTED;
    case ErrorCode.ErrSlotNotFound:
      return grpc.status.NOT_FOUND;
    case ErrorCode.ErrSlotConflict:
      return grpc.status.FAILED_PRECONDITION;
    case ErrorCode.ErrUnavailable:
    case ErrorCode.ErrWorkerUnreachable:
      return grpc.status.UNAVAILABLE;
    case ErrorCode.ErrSlotUncertain:
      return grpc.status.ABORTED;
    case ErrorCode.ErrInternal:
      return grpc.status.INTERNAL;
  }
}
