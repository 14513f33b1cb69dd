import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";

/** Where picked ports come from when the kernel's ephemeral range cannot be read. */
const FALLBACK_EPHEMERAL_LOW = 32768;
const LOWEST_PICK = 10000;

/**
 * freePort asks for a free loopback port (see freePorts). etcd cannot report a port it chose
 * itself, so dev picks its ports (and every child's /metrics port) this way; tests do too
 * (test/support/ports.ts).
 */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

/**
 * freePorts picks `count` distinct free loopback ports, below the kernel's ephemeral range, and
 * keeps every one bound until all are picked. Two races closed: picked one at a time (bind :0,
 * close, bind :0...), the kernel may hand a port just released back again (dev once gave etcd's
 * client port to a Coordinator's /metrics too, and that child failed with EADDRINUSE: etcd binds
 * only when it starts); and a port from the ephemeral range may be taken, before its owner binds
 * it, by any process's `listen(0)` or outgoing connection (the children's own gRPC servers bind
 * :0). Below that range the kernel never assigns a port by itself.
 */
export async function freePorts(count: number, random: () => number = Math.random): Promise<number[]> {
  const low = LOWEST_PICK;
  const high = ephemeralLow() - 1;
  const servers: Server[] = [];
  try {
    for (let tries = 0; servers.length < count; tries++) {
      // Past a few hundred refused picks (a crowded range), let the kernel choose.
      const port = high > low && tries < 500 ? low + Math.floor(random() * (high - low + 1)) : 0;
      const srv = createServer();
      const bound = await new Promise<boolean>((resolve) => {
        srv.once("error", () => resolve(false));
        srv.listen(port, "127.0.0.1", () => resolve(true));
      });
      if (bound) servers.push(srv);
    }
    return servers.map((srv) => {
      const addr = srv.address();
      return typeof addr === "object" && addr ? addr.port : 0;
    });
  } finally {
    await Promise.all(servers.map((srv) => new Promise<void>((resolve) => srv.close(() => resolve()))));
  }
}

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 1024 ? low : FALLBACK_EPHEMERAL_LOW;
  } catch {
    return FALLBACK_EPHEMERAL_LOW;
  }
}
