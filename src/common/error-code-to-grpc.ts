import * as grpc from "@grpc/grpc-js";
import { ErrorCode } from "./error-code";

/**
 * errorCodeToGRPC is the one table from the shared ErrorCode to a gRPC status. The Coordinator
 * (coordCodeToGRPC) and the Worker (workerCodeToGRPC) answer with it, which is what keeps the
 * Worker's statuses readable by the Coordinator's grpcErrToSlotError (a test holds the two
 * directions together). Client rules: UNAVAILABLE = retry now with jitter; RESOURCE_EXHAUSTED =
 * back off and retry; ABORTED = a slot may be dangling on some Worker: wait one slot TTL.
 */
export function errorCodeToGRPC(code: ErrorCode): grpc.status {
  switch (code) {
    case ErrorCode.ErrInvalidArgument:
      return grpc.status.INVALID_ARGUMENT;
    case ErrorCode.ErrUnavailable:
    case ErrorCode.ErrWorkerUnreachable:
      return grpc.status.UNAVAILABLE;
    case ErrorCode.ErrNoExecutableSlot:
    case ErrorCode.ErrNoSlot:
      return grpc.status.RESOURCE_EXHAUSTED;
    case ErrorCode.ErrSlotUncertain:
      return grpc.status.ABORTED;
    case ErrorCode.ErrSlotNotFound:
      return grpc.status.NOT_FOUND;
    case ErrorCode.ErrSlotConflict:
      return grpc.status.FAILED_PRECONDITION;
    case ErrorCode.ErrPermissionDenied:
      return grpc.status.PERMISSION_DENIED;
    case ErrorCode.ErrTaskRunElsewhere:
      return grpc.status.ALREADY_EXISTS;
    case ErrorCode.ErrInternal:
      return grpc.status.INTERNAL;
  }
}
