import { describe, expect, test } from "bun:test";
import type { Etcd3 } from "etcd3";
import { LegacyBlockWorkerRegistryPrefix } from "../../src/common/registry/registry-prefix";
import { createLogger } from "../../src/common/logging/logger";
import { RegisteredWorkers } from "../../src/proxy/adapters/registered-workers";
import { testHeartbeat } from "../support/heartbeat";

/**
 * The registry's read is the only IO here, so a stand-in for etcd that holds each read until the
 * test lets it go makes every interleaving of a miss with the periodic reads reproducible (the
 * proxy's process test runs it against a real etcd).
 */
class GatedRegistry {
  kv: Record<string, string> = {};
  reads = 0;
  private gates: Array<() => void> = [];
  held = true;

  asEtcd(): Etcd3 {
    const self = this;
    return {
      getAll: () => ({
        prefix: () => ({
          strings: async () => {
            self.reads++;
            const snapshot = { ...self.kv }; // what etcd answers is what it held when the read began
            if (self.held) await new Promise<void>((r) => self.gates.push(r));
            return snapshot;
          },
        }),
      }),
    } as unknown as Etcd3;
  }

  register(addr: string): void {
    this.kv[`${LegacyBlockWorkerRegistryPrefix}${addr}`] = JSON.stringify(testHeartbeat(addr, { lastHeartbeatMs: Date.now() }));
  }

  release(): void {
    for (const g of this.gates.splice(0)) g();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("RegisteredWorkers", () => {
  test("a miss is answered by a read that began after it, even when the read under way at the end of its wait began after the miss and has not ended", async () => {
    const reg = new GatedRegistry();
    reg.held = false;
    const workers = new RegisteredWorkers(reg.asEtcd(), createLogger("error"));
    try {
      await workers.read(); // lastReadMs = now: the miss below must wait out MISS_REREAD_MS
      reg.register("10.0.0.1:7000");
      reg.held = true;
      const answer = workers.has("10.0.0.1:7000");
      await sleep(50);
      const late = workers.read(); // begins after the miss (it sees the Worker) and is still in flight when the wait ends
      await sleep(300);
      reg.release();
      await late;
      expect(await answer).toBe(true);
    } finally {
      reg.release();
      workers.close();
    }
  });

  test("a miss while an older read is in flight waits for it and then reads again", async () => {
    const reg = new GatedRegistry();
    const workers = new RegisteredWorkers(reg.asEtcd(), createLogger("error"));
    try {
      const old = workers.read(); // began before the Worker registered
      reg.register("10.0.0.2:7000");
      const answer = workers.has("10.0.0.2:7000");
      await sleep(10);
      reg.held = false; // the next read answers at once
      reg.release();
      await old;
      expect(await answer).toBe(true);
      expect(reg.reads).toBe(2);
    } finally {
      reg.release();
      workers.close();
    }
  });

  test("an address never registered is refused after one fresh read", async () => {
    const reg = new GatedRegistry();
    reg.held = false;
    const workers = new RegisteredWorkers(reg.asEtcd(), createLogger("error"));
    try {
      expect(await workers.has("10.0.0.3:7000")).toBe(false);
      expect(reg.reads).toBe(1);
    } finally {
      workers.close();
    }
  });
});
