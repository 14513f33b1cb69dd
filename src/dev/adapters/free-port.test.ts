import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { freePorts } from "./free-port";

const ephemeralLow = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
/** A box whose ephemeral range starts at or below 10,000 leaves nothing below it: freePorts lets the kernel pick. */
const rangeBelow = ephemeralLow > 10_001;

test("freePorts: distinct, below the kernel's ephemeral range, and free once returned", async () => {
  const ports = await freePorts(40);
  expect(new Set(ports).size).toBe(40);
  if (rangeBelow) {
    for (const p of ports) {
      expect(p).toBeGreaterThanOrEqual(10000);
      expect(p).toBeLessThan(ephemeralLow);
    }
  }
  for (const p of ports) {
    const srv = createServer();
    await new Promise<void>((resolve, reject) => {
      srv.once("error", reject);
      srv.listen(p, "127.0.0.1", () => resolve());
    });
    await new Promise<void>((resolve) => srv.close(() => resolve()));
  }
});

test.if(rangeBelow)("freePorts: a port in use, or drawn twice, is passed over (the draws here repeat one port)", async () => {
  const [held, other] = (await freePorts(2)) as [number, number];
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(held, "127.0.0.1", () => resolve()));
  try {
    // The first draws all land on `held` (in use), then on one other port twice, then anywhere.
    const at = (p: number) => (p - 10000) / (ephemeralLow - 1 - 10000 + 1) + 1e-9;
    const draws = [at(held), at(held), at(other), at(other)];
    const ports = await freePorts(3, () => draws.shift() ?? Math.random());
    expect(ports).not.toContain(held);
    expect(ports[0]).toBe(other);
    expect(new Set(ports).size).toBe(3);
  } finally {
    await new Promise<void>((resolve) => holder.close(() => resolve()));
  }
});
