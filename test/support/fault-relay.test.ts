/**
 * The soak's and the gray-fault tests' TCP relay, against a real echo server on loopback: what a
 * partition holds and delivers at the heal, a refusal, and an answer lost after a request of a
 * given size (the relay sees sizes only) while smaller and larger requests pass.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { connect, createServer, type Server, type Socket } from "node:net";
import { FaultRelay } from "./fault-relay";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** An echo server: every byte comes back. */
async function echoServer(): Promise<string> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on("error", () => {});
    s.on("data", (b) => s.write(b));
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return `127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** A client of the relay that keeps what it hears and whether its connection was reset or closed. */
async function client(relay: FaultRelay): Promise<{ socket: Socket; heard: () => number; ended: () => boolean }> {
  const socket = connect(relay.port, "127.0.0.1");
  let heard = 0;
  let ended = false;
  socket.on("data", (b: Buffer) => (heard += b.length));
  socket.on("error", () => {});
  socket.on("close", () => (ended = true));
  await new Promise<void>((r) => socket.once("connect", () => r()));
  cleanups.push(() => socket.destroy());
  return { socket, heard: () => heard, ended: () => ended };
}

async function relayTo(addr: string): Promise<FaultRelay> {
  const relay = await FaultRelay.start(addr);
  cleanups.push(() => relay.close());
  return relay;
}

describe("FaultRelay", () => {
  test("a partition holds every byte, either way, and a new connection, and delivers them all at the heal", async () => {
    const relay = await relayTo(await echoServer());
    const a = await client(relay);
    a.socket.write("x".repeat(100));
    await Bun.sleep(100);
    expect(a.heard()).toBe(100);
    relay.partition();
    a.socket.write("y".repeat(50));
    const b = await client(relay); // accepted, not yet connected onwards
    b.socket.write("z".repeat(30));
    await Bun.sleep(200);
    expect([a.heard(), b.heard(), a.ended(), b.ended()]).toEqual([100, 0, false, false]);
    relay.heal();
    await Bun.sleep(200);
    expect([a.heard(), b.heard()]).toEqual([150, 30]);
  });

  test("refuse resets new connections until the heal; cut resets the open ones", async () => {
    const relay = await relayTo(await echoServer());
    const open = await client(relay);
    relay.refuse();
    relay.cut();
    const refused = await client(relay);
    await Bun.sleep(100);
    expect([open.ended(), refused.ended()]).toEqual([true, true]);
    relay.heal();
    const again = await client(relay);
    again.socket.write("ok");
    await Bun.sleep(100);
    expect(again.heard()).toBe(2);
  });

  test("dropAnswerAfterRequest loses the answer to the first request of its size (the request itself passes whole), then resets; smaller and larger ones pass", async () => {
    let received = 0;
    const server = createServer((s) => {
      s.on("error", () => {});
      s.on("data", (b) => {
        received += b.length;
        s.write("answer");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
    const relay = await relayTo(`127.0.0.1:${(server.address() as { port: number }).port}`);
    const fired = relay.dropAnswerAfterRequest({ minBytes: 1_000, maxBytes: 5_000, resetAfterMs: 300 });
    const c = await client(relay);
    c.socket.write("s".repeat(10)); // too small
    await Bun.sleep(100);
    c.socket.write("l".repeat(8_000)); // too large
    await Bun.sleep(100);
    const answered = c.heard();
    expect(answered).toBeGreaterThan(0);
    c.socket.write("m".repeat(2_000)); // this one
    expect(await fired).toBe(true);
    await Bun.sleep(100);
    expect(received).toBe(10_010);
    expect(c.heard()).toBe(answered);
    expect(c.ended()).toBe(true);
    expect(relay.dropped).toBe(1);
  });

  test("a drop disarmed before any request of its size never fires", async () => {
    const relay = await relayTo(await echoServer());
    const fired = relay.dropAnswerAfterRequest({ minBytes: 1_000 });
    const c = await client(relay);
    c.socket.write("small");
    await Bun.sleep(100);
    relay.disarm();
    expect(await fired).toBe(false);
    c.socket.write("x".repeat(2_000));
    await Bun.sleep(100);
    expect(c.heard()).toBe(2_005);
  });
});
