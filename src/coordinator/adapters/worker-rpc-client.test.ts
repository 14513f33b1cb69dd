import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, test } from "bun:test";
import { ErrorCode } from "../../common/error-code";
import { freePort } from "../../../test/support/ports";
import { suiteSetting } from "../../../test/support/suite-tls";
import { WorkerDouble } from "../../../test/support/worker-double";
import { grpcErrToSlotError, WorkerRPCClient } from "./worker-rpc-client";
import {
  type RequestTaskSlotRequest,
  type RequestTaskSlotsRequest,
  type RequestTaskSlotsResponse,
  TaskSnapshot,
  WorkerServiceService,
  type WorkerServiceServer,
} from "../../gen/worker/v1/worker";

describe("grpcErrToSlotError", () => {
  const cases: [grpc.status, string, boolean, ErrorCode, boolean][] = [
    [grpc.status.INVALID_ARGUMENT, "task_id: required", false, ErrorCode.ErrInvalidArgument, false],
    [grpc.status.RESOURCE_EXHAUSTED, "no free slot", false, ErrorCode.ErrNoSlot, false],
    [grpc.status.FAILED_PRECONDITION, "slot bound to another task", false, ErrorCode.ErrSlotConflict, false],
    [grpc.status.NOT_FOUND, "unknown slot", false, ErrorCode.ErrSlotNotFound, false],
    [grpc.status.PERMISSION_DENIED, "not a coordinator", false, ErrorCode.ErrPermissionDenied, false],
    [grpc.status.UNAVAILABLE, "no connection to 127.0.0.1:9: connect ECONNREFUSED 127.0.0.1:9", true, ErrorCode.ErrWorkerUnreachable, false],
    [grpc.status.UNAVAILABLE, "the call ended without a status: the connection dropped", false, ErrorCode.ErrSlotUncertain, true],
    [grpc.status.UNAVAILABLE, "the Worker itself answered UNAVAILABLE", false, ErrorCode.ErrSlotUncertain, true],
    [grpc.status.DEADLINE_EXCEEDED, "no answer from 127.0.0.1:5 within the deadline", false, ErrorCode.ErrSlotUncertain, true],
    [grpc.status.DEADLINE_EXCEEDED, "no connection to 127.0.0.1:5 within the deadline", true, ErrorCode.ErrWorkerUnreachable, false],
    [grpc.status.CANCELLED, "Cancelled on client", false, ErrorCode.ErrSlotUncertain, true],
    [grpc.status.ABORTED, "aborted", false, ErrorCode.ErrSlotUncertain, true],
    [grpc.status.INTERNAL, "boom", false, ErrorCode.ErrSlotUncertain, true],
    [grpc.status.UNKNOWN, "?", false, ErrorCode.ErrSlotUncertain, true],
    [grpc.status.UNIMPLEMENTED, "no WorkerService here", false, ErrorCode.ErrInternal, false],
  ];
  for (const [code, details, neverSent, want, mayHaveAllocated] of cases) {
    test(`${grpc.status[code]} "${details}"${neverSent ? " (never sent)" : ""} -> ${want}${mayHaveAllocated ? " (may have allocated)" : ""}`, () => {
      expect(grpcErrToSlotError({ code, details, neverSent })).toEqual({ code: want, message: details, mayHaveAllocated });
    });
  }
});

describe("WorkerRPCClient against real gRPC servers", () => {
  // The Worker doubles serve the suite's worker certificate (mTLS unless the run has no suite CA).
  const client = new WorkerRPCClient(suiteSetting("coordinator"));
  const doubles: WorkerDouble[] = [];
  afterEach(async () => {
    for (const d of doubles.splice(0)) await d.stop();
  });

  test("a granting Worker returns its snapshot with the slot id; one cached channel per Worker", async () => {
    const w = await WorkerDouble.start();
    doubles.push(w);
    const a = await client.requestTaskSlot(w.addr, { taskId: "t1", ttlMs: 5000, timeoutMs: 2000, clientIdentity: "" });
    const b = await client.requestTaskSlot(w.addr, { taskId: "t2", ttlMs: 5000, timeoutMs: 2000, clientIdentity: "" });
    expect(a.snapshot?.slotId).toBe("slot-t1");
    expect(b.snapshot?.slotId).toBe("slot-t2");
    expect(w.requests).toEqual([
      { taskId: "t1", ttlMs: 5000 },
      { taskId: "t2", ttlMs: 5000 },
    ]);
    expect(client.cachedConnections).toBe(1);
    client.forget(w.addr);
    expect(client.cachedConnections).toBe(0);
  });

  test("explicit Worker rejections keep their meaning over the wire", async () => {
    const w = await WorkerDouble.start();
    doubles.push(w);
    const expectations: [grpc.status, ErrorCode][] = [
      [grpc.status.RESOURCE_EXHAUSTED, ErrorCode.ErrNoSlot],
      [grpc.status.NOT_FOUND, ErrorCode.ErrSlotNotFound],
      [grpc.status.FAILED_PRECONDITION, ErrorCode.ErrSlotConflict],
      [grpc.status.INVALID_ARGUMENT, ErrorCode.ErrInvalidArgument],
    ];
    for (const [code, want] of expectations) {
      w.behaviour = { code, details: `because ${grpc.status[code]}` };
      const res = await client.requestTaskSlot(w.addr, { taskId: "t", ttlMs: 5000, timeoutMs: 2000, clientIdentity: "" });
      expect(res.err).toEqual({ code: want, message: `because ${grpc.status[code]}`, mayHaveAllocated: false });
    }
  });

  test("connection refused is an explicit failure: nothing can have been allocated", async () => {
    const port = await freePort();
    const res = await client.requestTaskSlot(`127.0.0.1:${port}`, { taskId: "t", ttlMs: 5000, timeoutMs: 2000, clientIdentity: "" });
    expect(res.err?.code).toBe(ErrorCode.ErrWorkerUnreachable);
    expect(res.err?.mayHaveAllocated).toBe(false);
  });

  test("a Worker that takes the request and never answers is uncertain (the request may have been served)", async () => {
    const w = await WorkerDouble.start();
    doubles.push(w);
    w.behaviour = "hang";
    const res = await client.requestTaskSlot(w.addr, { taskId: "t", ttlMs: 5000, timeoutMs: 200, clientIdentity: "" });
    expect(w.requests.length).toBe(1);
    expect(res.err?.code).toBe(ErrorCode.ErrSlotUncertain);
    expect(res.err?.mayHaveAllocated).toBe(true);
  });

  test("requests of one turn to a Worker without RequestTaskSlots (UNIMPLEMENTED) each go as RequestTaskSlot", async () => {
    const w = await WorkerDouble.start();
    doubles.push(w);
    const answers = await Promise.all(["a", "b", "c"].map((taskId) => client.requestTaskSlot(w.addr, { taskId, ttlMs: 5000, timeoutMs: 2000, clientIdentity: "" })));
    expect(answers.map((a) => a.snapshot?.slotId)).toEqual(["slot-a", "slot-b", "slot-c"]);
    expect(w.requests.map((r) => r.taskId).sort()).toEqual(["a", "b", "c"]);
  });
});

describe("WorkerRPCClient coalesces one turn's requests to a Worker into one RequestTaskSlots", () => {
  /** A WorkerService with only the two slot calls: it records what arrived, answers per task. */
  async function slotServer(answer: (taskId: string) => { status: grpc.status; message?: string } | "hang") {
    const calls: { method: string; taskIds: string[] }[] = [];
    const server = new grpc.Server();
    server.addService(WorkerServiceService, {
      requestTaskSlot: (call: grpc.ServerUnaryCall<RequestTaskSlotRequest, TaskSnapshot>, cb: grpc.sendUnaryData<TaskSnapshot>) => {
        calls.push({ method: "one", taskIds: [call.request.taskId] });
        cb(null, TaskSnapshot.create({ taskId: call.request.taskId, slotId: `slot-${call.request.taskId}` }));
      },
      requestTaskSlots: (call: grpc.ServerUnaryCall<RequestTaskSlotsRequest, RequestTaskSlotsResponse>, cb: grpc.sendUnaryData<RequestTaskSlotsResponse>) => {
        const ids = call.request.requests.map((r) => r.taskId);
        calls.push({ method: "many", taskIds: ids });
        if (ids.some((id) => answer(id) === "hang")) return;
        cb(null, {
          outcomes: ids.map((taskId) => {
            const a = answer(taskId) as { status: grpc.status; message?: string };
            return a.status === grpc.status.OK
              ? { taskId, snapshot: TaskSnapshot.create({ taskId, slotId: `slot-${taskId}` }), status: 0, message: "" }
              : { taskId, snapshot: undefined, status: a.status, message: a.message ?? "" };
          }),
        });
      },
    } as unknown as WorkerServiceServer);
    const port = await new Promise<number>((resolve, reject) => server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
    return { addr: `127.0.0.1:${port}`, calls, stop: () => server.forceShutdown() };
  }

  test("each request gets what RequestTaskSlot would have answered it: a slot, or an explicit refusal", async () => {
    const client = new WorkerRPCClient({ kind: "insecure" });
    const s = await slotServer((id) => (id === "full" ? { status: grpc.status.RESOURCE_EXHAUSTED, message: "no free slot" } : { status: grpc.status.OK }));
    try {
      const answers = await Promise.all(["a", "full", "b"].map((taskId) => client.requestTaskSlot(s.addr, { taskId, ttlMs: 5000, timeoutMs: 2000, clientIdentity: "" })));
      expect(s.calls).toEqual([{ method: "many", taskIds: ["a", "full", "b"] }]);
      expect(answers[0]!.snapshot?.slotId).toBe("slot-a");
      expect(answers[1]!.err).toEqual({ code: ErrorCode.ErrNoSlot, message: "no free slot", mayHaveAllocated: false });
      expect(answers[2]!.snapshot?.slotId).toBe("slot-b");
      // A lone request goes as RequestTaskSlot.
      expect((await client.requestTaskSlot(s.addr, { taskId: "alone", ttlMs: 5000, timeoutMs: 2000, clientIdentity: "" })).snapshot?.slotId).toBe("slot-alone");
      expect(s.calls.at(-1)).toEqual({ method: "one", taskIds: ["alone"] });
    } finally {
      client.close();
      s.stop();
    }
  });

  test("a RequestTaskSlots left unanswered leaves every request in it uncertain (each may have been served)", async () => {
    const client = new WorkerRPCClient({ kind: "insecure" });
    const s = await slotServer(() => "hang");
    try {
      const answers = await Promise.all(["x", "y"].map((taskId) => client.requestTaskSlot(s.addr, { taskId, ttlMs: 5000, timeoutMs: 200, clientIdentity: "" })));
      expect(answers.map((a) => [a.err?.code, a.err?.mayHaveAllocated])).toEqual([
        [ErrorCode.ErrSlotUncertain, true],
        [ErrorCode.ErrSlotUncertain, true],
      ]);
    } finally {
      client.close();
      s.stop();
    }
  });
});
