import * as grpc from "@grpc/grpc-js";
import { describe, expect, test } from "bun:test";
import { ErrorCode } from "../../common/error-code";
import { grpcErrToSlotError } from "../../coordinator/adapters/worker-rpc-client";
import { workerCodeToGRPC } from "./worker-code-to-grpc";

/** The codes a Worker answers RequestTaskSlot with when it allocated nothing. */
const EXPLICIT_REJECTIONS = [ErrorCode.ErrInvalidArgument, ErrorCode.ErrNoSlot, ErrorCode.ErrSlotNotFound, ErrorCode.ErrSlotConflict, ErrorCode.ErrPermissionDenied];

describe("workerCodeToGRPC and grpcErrToSlotError are inverse", () => {
  for (const code of EXPLICIT_REJECTIONS) {
    test(`${code}: Worker -> gRPC ${grpc.status[workerCodeToGRPC(code)]} -> Coordinator ${code}, an explicit rejection`, () => {
      const slotError = grpcErrToSlotError({ code: workerCodeToGRPC(code), details: "because" });
      expect(slotError).toEqual({ code, message: "because", mayHaveAllocated: false });
    });
  }

  test("every gRPC status the Coordinator reads as an explicit Worker rejection comes from exactly one Worker code", () => {
    const explicitStatuses = Object.values(grpc.status)
      .filter((s): s is grpc.status => typeof s === "number")
      .filter((s) => {
        const e = grpcErrToSlotError({ code: s, details: "x" });
        return !e.mayHaveAllocated && e.code !== ErrorCode.ErrWorkerUnreachable && e.code !== ErrorCode.ErrInternal;
      });
    const fromWorker = EXPLICIT_REJECTIONS.map(workerCodeToGRPC);
    expect([...explicitStatuses].sort()).toEqual([...fromWorker].sort());
  });

  test("a Worker's internal failure stays uncertain: it may have allocated before failing", () => {
    expect(grpcErrToSlotError({ code: workerCodeToGRPC(ErrorCode.ErrInternal), details: "boom" }).mayHaveAllocated).toBe(true);
  });

  test("every ErrorCode has a status", () => {
    for (const code of Object.values(ErrorCode)) expect(typeof workerCodeToGRPC(code)).toBe("number");
  });
});
