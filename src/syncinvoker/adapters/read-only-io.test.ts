import { describe, expect, test } from "bun:test";
import { BackendRegistry } from "../../worker/io/backend-registry";
import { localtestserviceBackend } from "../../worker/io/localtestservice-backend";
import { ReadOnlyIo } from "./read-only-io";

/** Contract tests over the real registry and the real local test chain backend. */
describe("ReadOnlyIo", () => {
  const registry = new BackendRegistry().register(localtestserviceBackend({ head: 1000 }));
  let writes = 0;
  registry.register({ name: "sink", ops: { put: { kind: "write", handle: () => (writes++, "stored") } } });
  const io = new ReadOnlyIo(registry);

  test("reads pass through and are traced with their size and time", async () => {
    const callIo = io.forCall({ traced: true });
    const a = await callIo.io({ kind: "io", backend: "localtestservice", op: "eth_getBlockByNumber", params: { chain: "eth", number: 7, full: false } });
    expect(a.ok).toBe(true);
    expect(callIo.trace).toHaveLength(1);
    const t = callIo.trace[0]!;
    expect(t).toMatchObject({ backend: "localtestservice", op: "eth_getBlockByNumber", cacheHit: false, error: "" });
    expect(t.bytes).toBe(Buffer.byteLength(JSON.stringify((a as { value: unknown }).value)));
    expect(t.durationMs).toBeGreaterThanOrEqual(0);
    expect(callIo.writeAttempted).toBeNull();
  });

  test("a write op is refused with PermissionDenied naming backend.op, never reaches the backend, and marks the call once", async () => {
    const seen: string[] = [];
    const callIo = io.forCall({ traced: true, onWrite: (op) => seen.push(op) });
    for (const [backend, op] of [["sink", "put"], ["localtestservice", "eth_sendRawTransaction"]] as const) {
      const a = await callIo.io({ kind: "io", backend, op, params: {} });
      expect(a).toMatchObject({ ok: false, ioMs: 0, error: { type: "PermissionDenied" } });
      expect(!a.ok && a.error.message).toContain(`${backend}.${op} is a write op`);
    }
    expect(writes).toBe(0);
    expect(seen).toEqual(["sink.put"]);
    expect(callIo.writeAttempted).toBe("sink.put");
    expect(callIo.trace.map((t) => t.error.split(":")[0])).toEqual(["PermissionDenied", "PermissionDenied"]);
  });

  test("backend errors are traced; untraced calls record nothing", async () => {
    const traced = io.forCall({ traced: true });
    await traced.io({ kind: "io", backend: "localtestservice", op: "eth_getBlockByNumber", params: { chain: "eth", number: -1 } });
    expect(traced.trace[0]!.error).toStartWith("InvalidParams:");
    const quiet = io.forCall({ traced: false });
    await quiet.io({ kind: "io", backend: "localtestservice", op: "eth_blockNumber", params: { chain: "eth" } });
    await quiet.io({ kind: "io", backend: "sink", op: "put", params: null });
    expect(quiet.trace).toEqual([]);
    expect(quiet.writeAttempted).toBe("sink.put");
  });
});
