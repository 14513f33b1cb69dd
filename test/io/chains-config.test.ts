/** CHAINS_CONFIG: validation naming the field, inline or from a file, the default, and exit code 2 of a Worker given a bad one. */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_CHAINS_CONFIG, loadChainsConfig, parseChainsConfig } from "../../src/common/config/chains-config";
import { ConfigError } from "../../src/common/config/env-config";
import { BlockxProcess } from "../support/blockx-process";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function problems(f: () => unknown): string[] {
  try {
    f();
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error("expected a ConfigError");
}

describe("chains config", () => {
  test("an rpc chain gets the documented defaults; a local one needs nothing", () => {
    const c = parseChainsConfig({ chains: { ethereum: { source: "rpc", endpoints: ["https://node.example/v3/key", "http://10.0.0.2:8545"], finalityDepth: 64 }, test: { source: "localtestservice" } } });
    expect(c.chains!.ethereum).toEqual({
      source: "rpc",
      endpoints: ["https://node.example/v3/key", "http://10.0.0.2:8545"],
      finalityDepth: 64,
      maxBatchSize: 50,
      timeoutMs: 2_000,
      maxAttempts: 4,
      retryBackoffMs: 100,
      requestBudgetMs: 4_000,
    });
    expect(c.chains!.test).toEqual({ source: "localtestservice" });
  });

  test("empty is the default (every chain local); inline JSON and a file path both load", () => {
    expect(loadChainsConfig("  ")).toBe(DEFAULT_CHAINS_CONFIG);
    const doc = { chains: { dev: { source: "rpc", endpoints: ["http://127.0.0.1:8545"] } } };
    const dir = mkdtempSync(join(tmpdir(), "blockx-chains-"));
    dirs.push(dir);
    writeFileSync(join(dir, "chains.json"), JSON.stringify(doc));
    expect(loadChainsConfig(join(dir, "chains.json"))).toEqual(loadChainsConfig(JSON.stringify(doc)));
  });

  test("every problem names its field", () => {
    expect(problems(() => parseChainsConfig({ chains: { eth: { source: "rpc", endpoints: [] } } }))).toEqual(["CHAINS_CONFIG: chains.eth.endpoints: expected at least one endpoint URL"]);
    expect(problems(() => parseChainsConfig({ chains: { eth: { source: "rpc", endpoints: ["ws://x:1"] } } }))).toEqual(["CHAINS_CONFIG: chains.eth.endpoints[0]: expected an http:// or https:// URL"]);
    const p = problems(() => parseChainsConfig({ chains: { eth: { source: "rpc", endpoints: ["http://a:1"], timeoutMs: 0, maxBatchSize: "5", extra: 1 } } }));
    expect(p.some((x) => x.startsWith("CHAINS_CONFIG: chains.eth.timeoutMs: "))).toBe(true);
    expect(p.some((x) => x.startsWith("CHAINS_CONFIG: chains.eth.maxBatchSize: "))).toBe(true);
    expect(p.some((x) => x.startsWith("CHAINS_CONFIG: chains.eth: ") && x.includes("extra"))).toBe(true);
    expect(problems(() => parseChainsConfig({ chains: { eth: { source: "ipc" } } }))[0]).toStartWith("CHAINS_CONFIG: chains.eth.source: ");
    expect(problems(() => parseChainsConfig({ chains: { Eth: { source: "localtestservice" } } }))[0]).toStartWith("CHAINS_CONFIG: chains.Eth: ");
    expect(problems(() => parseChainsConfig({ chain: {} }))[0]).toStartWith("CHAINS_CONFIG: ");
    expect(problems(() => loadChainsConfig("{not json"))[0]).toStartWith("CHAINS_CONFIG: not valid JSON");
    expect(problems(() => loadChainsConfig("/no/such/chains.json"))).toEqual(['CHAINS_CONFIG: no such file "/no/such/chains.json" (give inline JSON starting with { or a file path)']);
  });

  test("a Worker given a bad CHAINS_CONFIG exits 2 naming the field", async () => {
    const w = BlockxProcess.spawn(["worker"], { CHAINS_CONFIG: JSON.stringify({ chains: { dev: { source: "rpc", endpoints: ["localhost:8545"] } } }) });
    expect(await w.exited).toBe(2);
    expect(w.stderr).toContain("CHAINS_CONFIG: chains.dev.endpoints[0]:");
  });
});
