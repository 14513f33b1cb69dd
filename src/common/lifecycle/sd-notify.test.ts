import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sdNotify } from "./sd-notify";

const dir = mkdtempSync(join(tmpdir(), "blockx-sdnotify-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A real datagram receiver (Python: Bun cannot bind Unix datagram sockets) printing what it gets. */
function receiver(address: string) {
  const script = [
    "import socket, sys",
    "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)",
    "a = sys.argv[1]",
    "s.bind('\\0' + a[1:] if a.startswith('@') else a)",
    "print('bound', flush=True)",
    "s.settimeout(20)",
    "print(s.recv(4096).decode(), flush=True)",
  ].join("\n");
  return Bun.spawn(["/usr/bin/python3", "-c", script, address], { stdout: "pipe" });
}

async function receive(address: string, message: string): Promise<string> {
  const p = receiver(address);
  const reader = (p.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  while (!text.includes("bound")) text += new TextDecoder().decode((await reader.read()).value);
  expect(sdNotify(message, { NOTIFY_SOCKET: address })).toBe(true);
  while (!text.includes("\n", text.indexOf("bound") + 6)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  await p.exited;
  return text.split("\n")[1]!;
}

describe("sdNotify", () => {
  test("sends the message as one datagram to a path socket", async () => {
    expect(await receive(join(dir, "notify.sock"), "READY=1")).toBe("READY=1");
  });

  test("sends to an abstract socket (@name), as systemd's NOTIFY_SOCKET may be", async () => {
    expect(await receive(`@blockx-test-${process.pid}`, "STOPPING=1")).toBe("STOPPING=1");
  });

  test("without NOTIFY_SOCKET, or with a socket nobody listens on, it returns false and never throws", () => {
    expect(sdNotify("READY=1", {})).toBe(false);
    expect(sdNotify("READY=1", { NOTIFY_SOCKET: join(dir, "nobody.sock") })).toBe(false);
    expect(sdNotify("READY=1", { NOTIFY_SOCKET: "relative" })).toBe(false);
  });
});
