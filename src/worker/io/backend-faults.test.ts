import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BackendFaults } from "./backend-faults";
import { BackendError, BackendRegistry } from "./backend-registry";
import { localtestserviceBackend } from "./localtestservice-backend";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function faultsFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "blockx-faults-"));
  dirs.push(dir);
  return join(dir, "faults.json");
}

describe("BackendFaults (LOCALTESTSERVICE_FAULTS_FILE)", () => {
  test("no file, a half-written file or out-of-range values: no faults", () => {
    const path = faultsFile();
    let now = 0;
    const f = new BackendFaults(path, () => 0, () => now);
    expect(f.current()).toEqual({ latencyMs: 0, errorRate: 0 });
    writeFileSync(path, '{"latencyMs": 5, "errorRa');
    now += 200;
    expect(f.current()).toEqual({ latencyMs: 0, errorRate: 0 });
    writeFileSync(path, '{"errorRate": 2}');
    now += 200;
    expect(f.current()).toEqual({ latencyMs: 0, errorRate: 0 });
  });

  test("the file is re-read at most every 200 ms, so a running Worker picks up changes", () => {
    const path = faultsFile();
    let now = 1_000;
    const f = new BackendFaults(path, () => 0, () => now);
    writeFileSync(path, '{"latencyMs": 7, "errorRate": 0.5}');
    expect(f.current()).toEqual({ latencyMs: 7, errorRate: 0.5 });
    writeFileSync(path, '{"errorRate": 0}');
    now += 199;
    expect(f.current()).toEqual({ latencyMs: 7, errorRate: 0.5 });
    now += 1;
    expect(f.current()).toEqual({ latencyMs: 0, errorRate: 0 });
  });

  test("through the registry: an injected failure reaches the function as a retryable BackendUnavailable; a healed backend answers", async () => {
    const path = faultsFile();
    let draw = 0.1;
    let now = 0;
    const faults = new BackendFaults(path, () => draw, () => now);
    const registry = new BackendRegistry().register(localtestserviceBackend({ faults }));
    writeFileSync(path, '{"errorRate": 0.3}');
    const failed = await registry.call("localtestservice", "eth_blockNumber", { chain: "ethereum" });
    expect(failed).toMatchObject({ ok: false, error: { type: "BackendUnavailable", retryable: true } });
    if (!failed.ok) expect(failed.error.message).toContain("injected failure");
    draw = 0.9; // above the error rate
    expect(await registry.call("localtestservice", "eth_blockNumber", { chain: "ethereum" })).toMatchObject({ ok: true });
    writeFileSync(path, "{}");
    now += 200;
    draw = 0;
    expect(await registry.call("localtestservice", "eth_blockNumber", { chain: "ethereum" })).toMatchObject({ ok: true });
  });

  test("a BackendError that is not retryable stays so (bad params are the caller's fault)", async () => {
    const registry = new BackendRegistry().register(localtestserviceBackend({ faults: new BackendFaults(faultsFile()) }));
    const bad = await registry.call("localtestservice", "eth_getBlockByNumber", { chain: "ethereum", number: -1 });
    expect(bad).toMatchObject({ ok: false, error: { type: "InvalidParams" } });
    if (!bad.ok) expect(bad.error.retryable).toBeUndefined();
    expect(new BackendError("X", "y").retryable).toBe(false);
  });
});
