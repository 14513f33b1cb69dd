import { describe, expect, test } from "bun:test";
import { ProxyRouter } from "./proxy-router";

const upstreams = { blockCoordinators: ["c1:1", "c2:2"], bundleCoordinators: ["b1:1"], syncInvoker: "s:9" };

describe("ProxyRouter", () => {
  test("Coordinator calls go round the list of their cluster, so a retry meets the next Coordinator", () => {
    const r = new ProxyRouter(upstreams);
    const path = "/coordinator.v1.CoordinatorService/ReserveWorkerSlot";
    expect([1, 2, 3].map(() => r.route(path, undefined))).toEqual([
      { ok: true, target: "c1:1", service: "coordinator.v1.CoordinatorService" },
      { ok: true, target: "c2:2", service: "coordinator.v1.CoordinatorService" },
      { ok: true, target: "c1:1", service: "coordinator.v1.CoordinatorService" },
    ]);
    expect(r.route("/bundlecoordinator.v1.BundleCoordinatorService/ReserveWorkerSlot", "w:1")).toMatchObject({ ok: true, target: "b1:1" });
  });

  test("Sync Invoker calls go to the Sync Invoker; Worker calls to the Worker in the header", () => {
    const r = new ProxyRouter(upstreams);
    expect(r.route("/syncinvoker.v1.SyncInvokerService/Invoke", undefined)).toMatchObject({ ok: true, target: "s:9" });
    expect(r.route("/worker.v1.WorkerService/WatchTasks", "10.0.0.7:9090")).toMatchObject({ ok: true, target: "10.0.0.7:9090" });
  });

  test("a Worker call without the header, or with a malformed one, is InvalidArgument with a message naming the header", () => {
    const r = new ProxyRouter(upstreams);
    expect(r.route("/worker.v1.WorkerService/SubmitTask", undefined)).toEqual({
      ok: false,
      code: "INVALID_ARGUMENT",
      message: "/worker.v1.WorkerService/SubmitTask through the proxy needs the x-blockx-worker-addr metadata header naming the Worker (host:port)",
    });
    expect(r.route("/worker.v1.WorkerService/SubmitTask", "no-port")).toMatchObject({ ok: false, code: "INVALID_ARGUMENT" });
  });

  test("an unknown service is Unimplemented", () => {
    expect(new ProxyRouter(upstreams).route("/other.v1.Thing/Do", undefined)).toMatchObject({ ok: false, code: "UNIMPLEMENTED" });
  });
});
