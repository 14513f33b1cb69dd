import * as grpc from "@grpc/grpc-js";
import { ErrorCode } from "../../common/error-code";

/**
 * coordCodeToGRPC is the one place where a Coordinator ErrorCode becomes a gRPC status.
 * Client rules: UNAVAILABLE = retry now with jitter; RESOURCE_EXHAUSTED = back off and retry;
 * ABORTED = a slot may be dangling on some Worker: wait one slot TTL, then retry.
 */
export function coordCodeToGRPC(code: ErrorCode): grpc.status {
  switch (code) {
    case ErrorCode.ErrInvalidArgument:
      return grpc.status.INVALID_ARGUMENT;
    case ErrorCode.ErrUnavailable:
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
    case ErrorCode.ErrWorkerUnreachable:
      return grpc.status.UNAVAILABLE;
    case ErrorCode.ErrInternal:
      return grpc.status.INTERNAL;
  }
}
