import { describe, expect, test } from "bun:test";
import { loadEnvConfig } from "../../common/config/env-config";
import { silentLogger } from "../../common/logging/logger";
import type { RawJson } from "../../runtime/json/raw-json";
import { BackendRegistry } from "../../runtime/io/backends/backend-registry";
import { ioConfigFrom, ioVars } from "../../runtime/io/io-config";
import { FaultInjector } from "../../runtime/io/fault-injection";
import { IoSubsystem } from "../../runtime/io/io-subsystem";
import { localtestserviceBackend } from "../../runtime/io/backends/localtestservice-backend";
import { ReadOnlyIo } from "./read-only-io";

/** The defaults of the IO variables, read-only as the Sync Invoker runs them. */
const READ_ONLY = { ...ioConfigFrom(loadEnvConfig(ioVars, {})).io, readOnly: true };

/** Contract tests over the real IO subsystem, the real registry and the real local test chain backend. */
describe("ReadOnlyIo", () => {
  let writes = 0;
  const registry = new BackendRegistry()
    .register(localtestserviceBackend({ head: 1000 }))
    .register({ name: "sink", ops: { put: { kind: "write", handle: () => (writes++, "stored") } } });
  const subsystem = new IoSubsystem(registry, READ_ONLY);
  const io = new ReadOnlyIo(subsystem);
  const block = (number: number) => ({ kind: "io" as const, backend: "localtestservice", op: "eth_getBlockByNumber", params: { chain: "eth", number, full: false } });

  test("refuses a subsystem that is not read-only", () => {
    expect(() => new ReadOnlyIo(new IoSubsystem(registry, { ...READ_ONLY, readOnly: false }))).toThrow("readOnly: true");
  });

  test("reads are traced with their size and time; a second identical read of a final block is a cache hit", async () => {
    const callIo = io.forCall({ callId: "c1", traced: true });
    const a = await callIo.io(block(7));
    expect(a.ok).toBe(true);
    // The chain's head (first fetched by this read) arrives a few microtasks after the answer;
    // a function's next request comes at least one executor round trip later.
    await Bun.sleep(0);
    const again = await callIo.io(block(7));
    expect(again).toMatchObject({ ok: true, ioMs: 0 });
    expect(callIo.trace).toHaveLength(2);
    const [miss, hit] = callIo.trace;
    expect(miss).toMatchObject({ backend: "localtestservice", op: "eth_getBlockByNumber", cacheHit: false, error: "" });
    expect(hit).toMatchObject({ backend: "localtestservice", op: "eth_getBlockByNumber", cacheHit: true, error: "" });
    const text = (a as { value: RawJson }).value.text;
    expect(JSON.parse(text).number).toBe("0x7");
    expect(miss!.bytes).toBe(Buffer.byteLength(text));
    expect(hit!.bytes).toBe(miss!.bytes);
    expect(callIo.writeAttempted).toBeNull();
    callIo.end();
    // A block above head - finality depth is read from the backend every time.
    const recent = io.forCall({ callId: "c2", traced: true });
    await recent.io(block(999));
    await recent.io(block(999));
    expect(recent.trace.map((t) => t.cacheHit)).toEqual([false, false]);
    recent.end();
  });

  test("a write op is refused with PermissionDenied naming backend.op, never reaches the backend, and marks the call once", async () => {
    const seen: string[] = [];
    const callIo = io.forCall({ callId: "w1", traced: true, onWrite: (op) => seen.push(op) });
    for (const [backend, op] of [["sink", "put"], ["localtestservice", "eth_sendRawTransaction"]] as const) {
      const a = await callIo.io({ kind: "io", backend, op, params: {} });
      expect(a).toMatchObject({ ok: false, ioMs: 0, error: { type: "PermissionDenied" } });
      expect(!a.ok && a.error.message).toContain(`${backend}.${op} is a write op`);
    }
    expect(writes).toBe(0);
    expect(seen).toEqual(["sink.put"]);
    expect(callIo.writeAttempted).toBe("sink.put");
    expect(callIo.trace.map((t) => t.error)).toEqual([
      "PermissionDenied: sink.put is a write op; this IO path is read-only",
      "PermissionDenied: localtestservice.eth_sendRawTransaction is a write op; this IO path is read-only",
    ]);
    callIo.end();
  });

  test("backend errors are traced as `Type: message`; untraced calls record nothing; an ended call's IO is released", async () => {
    const traced = io.forCall({ callId: "e1", traced: true });
    await traced.io({ kind: "io", backend: "localtestservice", op: "eth_getBlockByNumber", params: { chain: "eth", number: -1 } });
    expect(traced.trace[0]!.error).toStartWith("InvalidParams: localtestservice.eth_getBlockByNumber: ");
    traced.end();
    const quiet = io.forCall({ callId: "q1", traced: false });
    await quiet.io({ kind: "io", backend: "localtestservice", op: "eth_blockNumber", params: { chain: "eth" } });
    await quiet.io({ kind: "io", backend: "sink", op: "put", params: null });
    expect(quiet.trace).toEqual([]);
    expect(quiet.writeAttempted).toBe("sink.put");
    quiet.end();
    expect(subsystem.snapshot()).toMatchObject({ tasks: 0, flights: 0 });
    // A request after the end (a late sub-call) is answered without reaching the backend.
    expect(await quiet.io(block(8))).toMatchObject({ ok: false, error: { type: "Cancelled" } });
  });

  test("a traced read's time and the call's IO time include the backend's latency (40 ms injected); a cache hit waits for nothing", async () => {
    const slow = new ReadOnlyIo(new IoSubsystem(new BackendRegistry().register(new FaultInjector({ latencyMs: 40, errorRate: 0 }, "", silentLogger()).wrap(localtestserviceBackend({ head: 1000 }))), READ_ONLY));
    const callIo = slow.forCall({ callId: "slow1", traced: true });
    const miss = await callIo.io(block(5));
    expect(miss.ok).toBe(true);
    expect(miss.ioMs).toBeGreaterThanOrEqual(40);
    expect(callIo.trace[0]!.durationMs).toBeGreaterThanOrEqual(40);
    await Bun.sleep(0); // the head arrives a few microtasks after the answer (see above)
    expect(await callIo.io(block(5))).toMatchObject({ ok: true, ioMs: 0 });
    expect(callIo.trace[1]!.cacheHit).toBe(true);
    callIo.end();
  });
});
