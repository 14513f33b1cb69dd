import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** The kernel's ephemeral range: outgoing connections take their local ports from it. */
function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    if (lo && hi) return [lo, hi];
  } catch {
    // not Linux: assume the IANA range
  }
  return [49152, 65535];
}

function tryListen(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", () => resolve(null));
    srv.listen(port, "127.0.0.1", () => {
      const addr = srv.address();
      const bound = typeof addr === "object" && addr !== null ? addr.port : null;
      srv.close(() => resolve(bound));
    });
  });
}

/**
 * freePort finds a free loopback port (closed again before it is returned) below the ephemeral
 * range. A port handed out by the kernel (`listen(0)`) comes from that range, and between its
 * close and the real bind, or while a process is restarted on it, an outgoing connection may take
 * it (EADDRINUSE, seen in the soak); below the range only another listener can.
 */
export async function freePort(): Promise<number> {
  const [lo] = ephemeralRange();
  const base = Math.min(20_000, lo - 2_000);
  for (let i = 0; i < 50 && lo - base > 100; i++) {
    const port = base + Math.floor(Math.random() * (lo - base));
    const got = await tryListen(port);
    if (got !== null) return got;
  }
  const got = await tryListen(0);
  if (got === null) throw new Error("no free loopback port");
  return got;
}
