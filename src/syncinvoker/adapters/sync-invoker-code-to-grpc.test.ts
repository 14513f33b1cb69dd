import * as grpc from "@grpc/grpc-js";
import { expect, test } from "bun:test";
import { SyncInvokerErrorCode } from "../core/sync-invoker-error";
import { syncInvokerCodeToGRPC } from "./sync-invoker-code-to-grpc";

test("every Sync Invoker code has its own gRPC status, and none is OK or UNKNOWN", () => {
  const statuses = Object.values(SyncInvokerErrorCode).map(syncInvokerCodeToGRPC);
  expect(new Set(statuses).size).toBe(statuses.length);
  for (const s of statuses) {
    expect(s).not.toBe(grpc.status.OK);
    expect(s).not.toBe(grpc.status.UNKNOWN);
  }
  expect(syncInvokerCodeToGRPC(SyncInvokerErrorCode.WriteRejected)).toBe(grpc.status.PERMISSION_DENIED);
  expect(syncInvokerCodeToGRPC(SyncInvokerErrorCode.QueueFull)).toBe(grpc.status.RESOURCE_EXHAUSTED);
  expect(syncInvokerCodeToGRPC(SyncInvokerErrorCode.FunctionNotFound)).toBe(grpc.status.NOT_FOUND);
});
