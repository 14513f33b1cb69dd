import * as grpc from "@grpc/grpc-js";
import { SyncInvokerErrorCode } from "../core/sync-invoker-error";

/**
 * syncInvokerCodeToGRPC is the one table from a Sync Invoker error to a gRPC status. Client
 * rules: RESOURCE_EXHAUSTED = back off and retry; UNAVAILABLE = retry (another invoker, or
 * later); DEADLINE_EXCEEDED = the call never ran (safe to retry with a longer deadline);
 * PERMISSION_DENIED / NOT_FOUND / INVALID_ARGUMENT = fix the function or the request.
 */
export function syncInvokerCodeToGRPC(code: SyncInvokerErrorCode): grpc.status {
  switch (code) {
    case SyncInvokerErrorCode.InvalidArgument:
      return grpc.status.INVALID_ARGUMENT;
    case SyncInvokerErrorCode.FunctionNotFound:
      return grpc.status.NOT_FOUND;
    case SyncInvokerErrorCode.QueueFull:
      return grpc.status.RESOURCE_EXHAUSTED;
    case SyncInvokerErrorCode.DeadlineExceeded:
      return grpc.status.DEADLINE_EXCEEDED;
    case SyncInvokerErrorCode.WriteRejected:
      return grpc.status.PERMISSION_DENIED;
    case SyncInvokerErrorCode.Unavailable:
      return grpc.status.UNAVAILABLE;
    case SyncInvokerErrorCode.Cancelled:
      return grpc.status.CANCELLED;
    case SyncInvokerErrorCode.Internal:
      return grpc.status.INTERNAL;
  }
}
