import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, test } from "bun:test";
import * as http2 from "node:http2";
import { mkdtempSync, rmSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLIENT_IDENTITY_HEADER } from "../../common/tls/client-identity-header";
import type { TlsSetting } from "../../common/tls/tls-setting";
import { RequestTaskSlotRequest, TaskSnapshot, TaskState, WorkerServiceService, type WorkerServiceServer } from "../../gen/worker/v1/worker";
import { freePort } from "../../../test/support/ports";
import { suiteServerCredentials, suiteSetting, type SuiteRole } from "../../../test/support/suite-tls";
import { DEFAULT_UNARY_CHANNEL_OPTIONS, Http2UnaryChannel, UnaryCallError } from "./http2-unary-channel";

const PATH = WorkerServiceService.requestTaskSlot.path;
const request = (taskId: string) => RequestTaskSlotRequest.encode({ taskId, ttlMs: 5000 }).finish();
const INSECURE: TlsSetting = { kind: "insecure" };

/** failure: the UnaryCallError a call rejected with (fails the test if it resolved). */
async function failure(p: Promise<unknown>): Promise<UnaryCallError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(UnaryCallError);
    return e as UnaryCallError;
  }
  throw new Error("the call succeeded");
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** slotServer: a real grpc-js WorkerService answering RequestTaskSlot with `answer`, recording the metadata it got. */
async function slotServer(o: { role?: SuiteRole; port?: number; answer?: (taskId: string, send: grpc.sendUnaryData<TaskSnapshot>) => void } = {}) {
  const seen: { taskId: string; identity: string }[] = [];
  const server = new grpc.Server();
  server.addService(WorkerServiceService, {
    requestTaskSlot: (call: grpc.ServerUnaryCall<RequestTaskSlotRequest, TaskSnapshot>, send: grpc.sendUnaryData<TaskSnapshot>) => {
      seen.push({ taskId: call.request.taskId, identity: String(call.metadata.get(CLIENT_IDENTITY_HEADER)[0] ?? "") });
      if (o.answer) return o.answer(call.request.taskId, send);
      send(null, TaskSnapshot.create({ taskId: call.request.taskId, slotId: `slot-${call.request.taskId}`, state: TaskState.ALLOCATED }));
    },
  } as unknown as WorkerServiceServer);
  const credentials = o.role ? await suiteServerCredentials(o.role) : grpc.ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) => server.bindAsync(`127.0.0.1:${o.port ?? 0}`, credentials, (e, p) => (e ? reject(e) : resolve(p))));
  const stop = () => server.forceShutdown();
  cleanups.push(stop);
  return { addr: `127.0.0.1:${port}`, port, seen, stop };
}

/** rawServer: a plaintext HTTP/2 server whose every stream `handle` answers as it likes (protocol faults). */
async function rawServer(handle: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void) {
  const server = http2.createServer();
  server.on("stream", (stream, headers) => {
    stream.on("error", () => {});
    stream.resume();
    handle(stream as http2.ServerHttp2Stream, headers);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

function channel(addr: string, tls: TlsSetting = INSECURE, options = DEFAULT_UNARY_CHANNEL_OPTIONS): Http2UnaryChannel {
  const c = new Http2UnaryChannel(addr, tls, ["worker"], options);
  cleanups.push(() => c.close());
  return c;
}

describe("Http2UnaryChannel against a real grpc-js server", () => {
  test("mTLS: calls over one connection get the answers; the client identity header arrives", async () => {
    const s = await slotServer({ role: "worker" });
    const c = channel(s.addr, suiteSetting("coordinator"));
    const a = TaskSnapshot.decode(await c.unary(PATH, request("a"), { [CLIENT_IDENTITY_HEADER]: "client/alice" }, Date.now() + 5000));
    const b = TaskSnapshot.decode(await c.unary(PATH, request("b"), {}, Date.now() + 5000));
    expect([a.slotId, b.slotId]).toEqual(["slot-a", "slot-b"]);
    expect(s.seen).toEqual([
      { taskId: "a", identity: "client/alice" },
      { taskId: "b", identity: "" },
    ]);
  });

  test("a unix: target is a Unix socket (the local proxy's)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "h2-unix-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const server = new grpc.Server();
    server.addService(WorkerServiceService, {
      requestTaskSlot: (call: grpc.ServerUnaryCall<RequestTaskSlotRequest, TaskSnapshot>, send: grpc.sendUnaryData<TaskSnapshot>) =>
        send(null, TaskSnapshot.create({ taskId: call.request.taskId, slotId: `unix-${call.request.taskId}` })),
    } as unknown as WorkerServiceServer);
    const target = `unix:${join(dir, "proxy.sock")}`;
    await new Promise<number>((resolve, reject) => server.bindAsync(target, grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
    cleanups.push(() => server.forceShutdown());
    expect(TaskSnapshot.decode(await channel(target).unary(PATH, request("u"), {}, Date.now() + 5000)).slotId).toBe("unix-u");
  });

  test("mTLS: a server whose certificate names another role is refused before anything is sent", async () => {
    const s = await slotServer({ role: "client" });
    const e = await failure(channel(s.addr, suiteSetting("coordinator")).unary(PATH, request("x"), {}, Date.now() + 5000));
    expect(e.code).toBe(grpc.status.UNAVAILABLE);
    expect(e.neverSent).toBe(true);
    expect(e.details).toContain("expected worker");
    expect(s.seen).toEqual([]);
  });

  test("a status with a message comes back as sent; the message is decoded", async () => {
    const s = await slotServer({ answer: (_id, send) => send({ code: grpc.status.RESOURCE_EXHAUSTED, details: "no free slot: 0 of 4 (100%)" }) });
    const e = await failure(channel(s.addr).unary(PATH, request("x"), {}, Date.now() + 5000));
    expect([e.code, e.details, e.neverSent]).toEqual([grpc.status.RESOURCE_EXHAUSTED, "no free slot: 0 of 4 (100%)", false]);
  });

  test("a refused connection fails at once, never sent; calls during the back-off fail fast; after it the channel connects", async () => {
    const port = await freePort();
    const c = channel(`127.0.0.1:${port}`, INSECURE, { ...DEFAULT_UNARY_CHANNEL_OPTIONS, initialBackoffMs: 300 });
    const first = await failure(c.unary(PATH, request("x"), {}, Date.now() + 5000));
    expect([first.code, first.neverSent]).toEqual([grpc.status.UNAVAILABLE, true]);
    expect(first.details).toContain("ECONNREFUSED");
    const s = await slotServer({ port });
    const during = await failure(c.unary(PATH, request("y"), {}, Date.now() + 5000));
    expect([during.code, during.neverSent]).toEqual([grpc.status.UNAVAILABLE, true]);
    expect(during.details).toContain("next attempt in");
    await Bun.sleep(350);
    expect(TaskSnapshot.decode(await c.unary(PATH, request("z"), {}, Date.now() + 5000)).slotId).toBe("slot-z");
    expect(s.seen.map((x) => x.taskId)).toEqual(["z"]);
  });

  test("a server that takes the request and never answers: DEADLINE_EXCEEDED, sent (it may have acted)", async () => {
    const s = await slotServer({ answer: () => {} });
    const e = await failure(channel(s.addr).unary(PATH, request("x"), {}, Date.now() + 200));
    expect([e.code, e.neverSent]).toEqual([grpc.status.DEADLINE_EXCEEDED, false]);
    expect(s.seen.length).toBe(1);
  });

  test("a peer that accepts TCP but never completes the TLS handshake: DEADLINE_EXCEEDED, never sent", async () => {
    const silent = net.createServer((sock) => cleanups.push(() => sock.destroy()));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => silent.close(() => resolve())));
    const addr = `127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
    const e = await failure(channel(addr, suiteSetting("coordinator")).unary(PATH, request("x"), {}, Date.now() + 200));
    expect([e.code, e.neverSent]).toEqual([grpc.status.DEADLINE_EXCEEDED, true]);
    expect(e.details).toContain("no connection");
  });

  test("a plaintext peer that accepts TCP and never speaks HTTP/2: never sent; the attempt is dropped after connectTimeoutMs and backs off", async () => {
    const silent = net.createServer((sock) => cleanups.push(() => sock.destroy()));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => silent.close(() => resolve())));
    const addr = `127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
    const c = channel(addr, INSECURE, { ...DEFAULT_UNARY_CHANNEL_OPTIONS, connectTimeoutMs: 300, initialBackoffMs: 5_000 });
    const first = await failure(c.unary(PATH, request("x"), {}, Date.now() + 200));
    expect([first.code, first.neverSent]).toEqual([grpc.status.DEADLINE_EXCEEDED, true]);
    await Bun.sleep(250);
    const next = await failure(c.unary(PATH, request("y"), {}, Date.now() + 5000));
    expect([next.code, next.neverSent]).toEqual([grpc.status.UNAVAILABLE, true]);
    expect(next.details).toContain("no connection within 300 ms");
    expect(next.details).toContain("next attempt in");
  });

  test("the server dies mid-call: UNAVAILABLE, sent; a server back on the port is reached by the next call", async () => {
    const port = await freePort();
    const s = await slotServer({ port, answer: () => {} });
    const c = channel(`127.0.0.1:${port}`);
    const pending = failure(c.unary(PATH, request("x"), {}, Date.now() + 5000));
    while (s.seen.length === 0) await Bun.sleep(5);
    s.stop();
    const e = await pending;
    expect(e.neverSent).toBe(false);
    expect([grpc.status.UNAVAILABLE, grpc.status.CANCELLED, grpc.status.INTERNAL]).toContain(e.code);
    const again = await slotServer({ port });
    expect(TaskSnapshot.decode(await c.unary(PATH, request("y"), {}, Date.now() + 5000)).slotId).toBe("slot-y");
    expect(again.seen.map((x) => x.taskId)).toEqual(["y"]);
  });

  test("close: calls after it fail, never sent", async () => {
    const s = await slotServer();
    const c = channel(s.addr);
    await c.unary(PATH, request("a"), {}, Date.now() + 5000);
    c.close();
    const e = await failure(c.unary(PATH, request("b"), {}, Date.now() + 5000));
    expect([e.code, e.neverSent]).toEqual([grpc.status.UNAVAILABLE, true]);
    expect(s.seen.map((x) => x.taskId)).toEqual(["a"]);
  });
});

describe("Http2UnaryChannel reads hostile or broken answers as gRPC specifies", () => {
  const ok = { ":status": 200, "content-type": "application/grpc" };
  const frame = (body: Uint8Array, declared = body.length) => {
    const f = Buffer.alloc(5 + body.length);
    f.writeUInt32BE(declared, 1);
    f.set(body, 5);
    return f;
  };

  test("an answer larger than the bound is refused (RESOURCE_EXHAUSTED), not buffered", async () => {
    const addr = await rawServer((s) => {
      s.respond(ok, { waitForTrailers: true });
      s.on("wantTrailers", () => s.sendTrailers({ "grpc-status": "0" }));
      s.end(frame(new Uint8Array(64 * 1024)));
    });
    const e = await failure(channel(addr, INSECURE, { ...DEFAULT_UNARY_CHANNEL_OPTIONS, maxResponseBytes: 1024 }).unary(PATH, request("x"), {}, Date.now() + 5000));
    expect(e.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(e.details).toContain("more than 1024 bytes");
  });

  test("OK with a frame whose length lies, or with no message: INTERNAL, sent", async () => {
    const lying = await rawServer((s) => {
      s.respond(ok, { waitForTrailers: true });
      s.on("wantTrailers", () => s.sendTrailers({ "grpc-status": "0" }));
      s.end(frame(new Uint8Array(10), 1000));
    });
    const empty = await rawServer((s) => s.respond({ ...ok, "grpc-status": "0" }, { endStream: true }));
    for (const [addr, why] of [
      [lying, "does not match its frame"],
      [empty, "no message"],
    ] as const) {
      const e = await failure(channel(addr).unary(PATH, request("x"), {}, Date.now() + 5000));
      expect([e.code, e.neverSent]).toEqual([grpc.status.INTERNAL, false]);
      expect(e.details).toContain(why);
    }
  });

  test("a trailers-only error carries its status and percent-encoded message in the headers", async () => {
    const addr = await rawServer((s) => s.respond({ ...ok, "grpc-status": String(grpc.status.NOT_FOUND), "grpc-message": "slot%20s-1%3A%20unknown" }, { endStream: true }));
    const e = await failure(channel(addr).unary(PATH, request("x"), {}, Date.now() + 5000));
    expect([e.code, e.details]).toEqual([grpc.status.NOT_FOUND, "slot s-1: unknown"]);
  });

  test("an HTTP error without a gRPC status maps to its gRPC code (503: UNAVAILABLE, 404: UNIMPLEMENTED)", async () => {
    const unavailable = await rawServer((s) => s.respond({ ":status": 503 }, { endStream: true }));
    const missing = await rawServer((s) => s.respond({ ":status": 404 }, { endStream: true }));
    expect((await failure(channel(unavailable).unary(PATH, request("x"), {}, Date.now() + 5000))).code).toBe(grpc.status.UNAVAILABLE);
    expect((await failure(channel(missing).unary(PATH, request("x"), {}, Date.now() + 5000))).code).toBe(grpc.status.UNIMPLEMENTED);
  });

  test("a stream reset without a status may have been processed, even REFUSED_STREAM (Bun reports every reset as code 0)", async () => {
    for (const code of [http2.constants.NGHTTP2_REFUSED_STREAM, http2.constants.NGHTTP2_INTERNAL_ERROR]) {
      const addr = await rawServer((s) => s.close(code));
      const e = await failure(channel(addr).unary(PATH, request("x"), {}, Date.now() + 5000));
      expect([e.code, e.neverSent]).toEqual([grpc.status.UNAVAILABLE, false]);
      expect(e.details).toContain("without a status");
    }
  });

  test("the deadline goes to the server as grpc-timeout; metadata as headers, never in place of the call's own", async () => {
    let headers: http2.IncomingHttpHeaders = {};
    const addr = await rawServer((s, h) => {
      headers = h;
      s.respond({ ...ok, "grpc-status": String(grpc.status.NOT_FOUND) }, { endStream: true });
    });
    await failure(channel(addr).unary(PATH, request("x"), { [CLIENT_IDENTITY_HEADER]: "client/bob", ":path": "/elsewhere", "grpc-timeout": "1H" }, Date.now() + 2000));
    expect(headers[":path"]).toBe(PATH);
    expect(headers["content-type"]).toBe("application/grpc");
    expect(headers.te).toBe("trailers");
    expect(headers[CLIENT_IDENTITY_HEADER]).toBe("client/bob");
    const ms = Number(/^(\d+)m$/.exec(String(headers["grpc-timeout"]))?.[1]);
    expect(ms).toBeGreaterThan(1000);
    expect(ms).toBeLessThanOrEqual(2000);
  });
});
