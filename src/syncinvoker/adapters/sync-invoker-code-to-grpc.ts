import * as grpc from "@grpc/grpc-js";
import type { SyncInvokerErrorCode } from "../core/sync-invoker-error";

/** One status per code; the Record type makes a new code without a status a compile error. */
const STATUS: Readonly<Record<SyncInvokerErrorCode, grpc.status>> = {
  INVALID_ARGUMENT: grpc.status.INVALID_ARGUMENT,
  FUNCTION_NOT_FOUND: grpc.status.NOT_FOUND,
  QUEUE_FULL: grpc.status.RESOURCE_EXHAUSTED,
  DEADLINE_EXCEEDED: grpc.status.DEADLINE_EXCEEDED,
  WRITE_REJECTED: grpc.status.PERMISSION_DENIED,
  UNAVAILABLE: grpc.status.UNAVAILABLE,
  CANCELLED: grpc.status.CANCELLED,
  INTERNAL: grpc.status.INTERNAL,
};

/**
 * syncInvokerCodeToGRPC is the one table from a Sync Invoker error to a gRPC status. Client
 * rules: RESOURCE_EXHAUSTED = back off and retry; UNAVAILABLE = retry (another invoker, or
 * later); DEADLINE_EXCEEDED = the call never ran (safe to retry with a longer deadline);
 * PERMISSION_DENIED / NOT_FOUND / INVALID_ARGUMENT = fix the function or the request.
 */
export function syncInvokerCodeToGRPC(code: SyncInvokerErrorCode): grpc.status {
  return STATUS[code];
}
