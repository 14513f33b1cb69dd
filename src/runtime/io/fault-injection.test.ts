import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { createLogger } from "../../common/logging/logger";
import { BackendRegistry } from "./backends/backend-registry";
import { FaultInjector } from "./fault-injection";
import { localtestserviceBackend } from "./backends/localtestservice-backend";
import { eventually } from "../../../test/support/eventually";

const log = createLogger("fatal", { role: "test" });
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe("FaultInjector", () => {
  test("without faults the backend's ops run as before (synchronously); the head and the cache declarations are kept", async () => {
    const f = new FaultInjector({ latencyMs: 0, errorRate: 0 }, "", log);
    const b = f.wrap(localtestserviceBackend({ head: 10 }));
    expect(b.ops.eth_blockNumber!.handle({ chain: "ethereum" })).toBe("0xa");
    expect(await b.head!("ethereum")).toBe(10);
    expect(b.ops.eth_getBlockByNumber!.cache!({ chain: "ethereum", number: 7, full: false })).toEqual({ chain: "ethereum", block: 7, key: "ethereum:7:false" });
  });

  test("an error rate of 1 fails every request with a retryable BackendUnavailable", async () => {
    const f = new FaultInjector({ latencyMs: 1, errorRate: 1 }, "", log);
    const r = await new BackendRegistry().register(f.wrap(localtestserviceBackend())).call("localtestservice", "eth_blockNumber", { chain: "ethereum" });
    expect(r).toMatchObject({ ok: false, error: { type: "BackendUnavailable", retryable: true } });
  });

  test("the faults file changes the faults at run time; a malformed file is ignored", async () => {
    const dir = mkdtempSync(join(tmpdir(), "blockx-faults-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "faults.json");
    // What the injector logs tells when it has read each version of the file.
    const logged: { msg: string }[] = [];
    const f = new FaultInjector({ latencyMs: 5, errorRate: 0 }, file, pino({ level: "info" }, { write: (line: string) => void logged.push(JSON.parse(line)) })).start();
    cleanups.push(() => f.stop());
    const ignored = () => logged.filter((l) => l.msg.startsWith("faults file ignored")).length;
    expect(f.current).toEqual({ latencyMs: 5, errorRate: 0 }); // no file yet: the env values
    writeFileSync(file, JSON.stringify({ latencyMs: 50 }));
    await eventually(() => f.current.latencyMs === 50);
    expect(f.current.errorRate).toBe(0);
    // Each bad version stays until the injector has read and refused it.
    writeFileSync(file, JSON.stringify({ latencyMs: -1 }));
    await eventually(() => ignored() >= 1 || f.current.latencyMs !== 50);
    expect(f.current).toEqual({ latencyMs: 50, errorRate: 0 });
    expect(ignored()).toBe(1);
    writeFileSync(file, "{not json");
    await eventually(() => ignored() >= 2 || f.current.latencyMs !== 50);
    expect(f.current).toEqual({ latencyMs: 50, errorRate: 0 });
    expect(ignored()).toBe(2);
    writeFileSync(file, JSON.stringify({ latencyMs: 0, errorRate: 0.5 }));
    await eventually(() => f.current.errorRate === 0.5);
  });
});
