/**
 * One `blockx dev` cluster (the compiled binary, 2 block Workers and a bundle Worker) seen the way an
 * operator sees it. A 20,000-block backfill runs while a second task fails on block 7.
 * - The dashboard (`blockx ui` inside dev, its URL in blockx-dev.env) opened in Debian's headless
 *   chromium: the workers view lists every Worker; the backfill's progress rises between two page
 *   loads; the failing task's page shows its story and its traceback. Screenshots go to
 *   test-output/dashboard/.
 * - Every role's /metrics (addresses in the dev-ready line) is scraped: names, types, samples of
 *   the calls that ran; every query of deploy/prometheus/grafana-dashboard.json names a metric
 *   some role exports.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { loadClientConfig } from "../../src/sdk/client-config";
import { BlockxProcess } from "../support/blockx-process";
import { FunctionCallConfig, Task } from "../../src/gen/worker/v1/worker";
import { HeadlessChromium } from "../support/chromium";

const ROOT = join(import.meta.dir, "..", "..");
const SHOTS = join(ROOT, "test-output", "dashboard");

interface DevReady {
  envFile: string;
  endpoints: Record<string, string>;
  metrics: Record<string, string>;
  ui: string;
}

let dir = "";
let dev: BlockxProcess;
let ready: DevReady;
let client: BlockxClient;
let browser: HeadlessChromium | null = null;
const backfillId = `ui-backfill-${Date.now()}`;
const failingId = `ui-failing-${Date.now()}`;

/** backfill: one call per block from..to of the local test chain, by the FUNCTIONS_DIR function `name`, rows to `table`. */
function backfill(taskId: string, name: string, from: number, to: number, table: string): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({ function: { name, entry: "main" }, config: { $case: "blockTable", blockTable: { chain: "ethereum", fromBlock: from, toBlock: to } } }),
    outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table } } }],
  });
}

function envFile(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of readFileSync(path, "utf8").matchAll(/^export (\w+)='(.*)'$/gm)) out[m[1]!] = m[2]!.replace(/'\\''/g, "'");
  return out;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "blockx-uitest-"));
  mkdirSync(join(dir, "functions"), { recursive: true });
  // Slow enough (2 ms a block) that 20,000 blocks are still running across two page loads.
  writeFileSync(join(dir, "functions", "slow_rows.py"), 'import time\n\ndef main(ctx, input):\n    ctx.log("block %d" % input["blockNumber"])\n    time.sleep(0.002)\n    return [{"block": input["blockNumber"]}]\n');
  writeFileSync(join(dir, "functions", "fails_at_7.py"), 'def main(ctx, input):\n    ctx.log("checking block %d" % input["blockNumber"])\n    if input["blockNumber"] == 7:\n        raise ValueError("boom at block 7")\n    return [{"block": input["blockNumber"]}]\n');
  dev = BlockxProcess.spawn(["dev"], {
    ETCD_BIN: process.env.BLOCKX_ETCD_BIN!,
    DEV_DIR: dir,
    DEV_WORKERS: "2",
    DEV_BUNDLE_WORKERS: "1",
    DEV_EXECUTORS_PER_WORKER: "2",
    DEV_TERMINAL_LOG_LEVEL: "error",
  });
  ready = (await dev.waitForLog((l) => l.msg === "dev ready", 120_000)) as unknown as DevReady;
  const env = envFile(ready.envFile);
  client = new BlockxClient(loadClientConfig({ ...env, PROXY_SOCKET_PATH: "" }));
  await client.submit(backfill(backfillId, "slow_rows", 1, 20_000, "ui_backfill"));
  const failing = await client.submit(backfill(failingId, "fails_at_7", 1, 50, "ui_failing"));
  await client.watch(failing).catch(() => {}); // ends FAILED
  mkdirSync(SHOTS, { recursive: true });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await client?.cancel({ taskId: backfillId, workerAddr: (await client.locate(backfillId)).workerAddr }).catch(() => {});
  client?.close();
  await dev?.stop("SIGINT");
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe("the dashboard in headless chromium", () => {
  test("blockx-dev.env names the dashboard and every child's /metrics", () => {
    const env = envFile(ready.envFile);
    expect(env.BLOCKX_UI_URL).toBe(ready.ui);
    expect(env.BLOCKX_DEV_METRICS_ADDRS!.split(",").map((p) => p.split("=")[0]).sort()).toEqual(Object.keys(ready.metrics).sort());
    expect(Object.keys(ready.metrics)).toEqual(expect.arrayContaining(["coordinator", "bundle-coordinator", "worker-1", "worker-2", "bundle-worker-1"]));
  });

  test("the workers view lists every Worker, and the backfill's progress rises between two page loads", async () => {
    browser = await HeadlessChromium.start();
    const workerAddrs = Object.entries(ready.endpoints).filter(([id]) => /worker/.test(id)).map(([, a]) => a).sort();
    const doneOf = `(() => { const r = document.querySelector('#tasks tr[data-task="${backfillId}"]'); return r && Number(r.dataset.done) > 0 && r.querySelector('td:nth-child(2)').textContent === 'RUNNING' ? Number(r.dataset.done) : 0; })()`;
    await browser.navigate(ready.ui);
    const first = await browser.waitUntil<number>(doneOf, 60_000);
    const listed = await browser.evaluate<string[]>(`[...document.querySelectorAll('#workers tr[data-worker]')].map((r) => r.dataset.worker).sort()`);
    expect(listed).toEqual(workerAddrs);
    await browser.screenshot(join(SHOTS, "overview-1.png"));
    expect(first).toBeLessThan(20_000);

    await browser.navigate("about:blank");
    await browser.navigate(ready.ui);
    const second = await browser.waitUntil<number>(`(() => { const d = ${doneOf}; return d > ${first} ? d : 0; })()`, 60_000);
    expect(second).toBeGreaterThan(first);
    await browser.screenshot(join(SHOTS, "overview-2.png"));
  }, 150_000);

  test("the failing task's page shows its story and the failing call's input and traceback", async () => {
    browser ??= await HeadlessChromium.start();
    await browser.navigate(`${ready.ui}#/task/${failingId}`);
    const traceback = await browser.waitUntil<string>(`document.querySelector('#traceback')?.textContent ?? ''`, 60_000);
    expect(traceback).toContain("ValueError: boom at block 7");
    expect(traceback).toContain("fails_at_7.py");
    expect(await browser.evaluate<string>(`document.querySelector('#task-state').textContent`)).toBe("FAILED");
    const story = await browser.evaluate<string[]>(`[...document.querySelectorAll('#story tbody tr td:nth-child(2)')].map((c) => c.textContent)`);
    expect(story).toEqual(expect.arrayContaining(["taskSlotRequested", "taskSubmitted", "taskFailed"]));
    expect(await browser.evaluate<string>(`document.body.textContent`)).toContain('"blockNumber":7');
    await browser.waitUntil<boolean>(`document.querySelector('#logs')?.textContent.includes('[block 7] log/info: checking block 7')`, 30_000);
    await browser.screenshot(join(SHOTS, "task-failed.png"));
  }, 90_000);
});

/** scrape: metric name -> TYPE of one role's /metrics, after checking every line is well formed. */
async function scrape(addr: string): Promise<{ types: Map<string, string>; text: string }> {
  const text = await (await fetch(`http://${addr}/metrics`)).text();
  const types = new Map<string, string>();
  for (const line of text.trimEnd().split("\n")) {
    const t = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (t) types.set(t[1]!, t[2]!);
    else if (!line.startsWith("# HELP ")) expect(line).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? -?[0-9.e+Inf-]+$/);
  }
  return { types, text };
}

describe("metrics of every role", () => {
  test("names and types: process counters, Worker histograms by outcome, Coordinator reservations; the calls that ran are counted", async () => {
    const all = new Map<string, string>();
    let okCalls = 0;
    let userErrors = 0;
    for (const [id, addr] of Object.entries(ready.metrics)) {
      const { types, text } = await scrape(addr);
      for (const [k, v] of types) all.set(k, v);
      expect(types.get("process_cpu_seconds_total")).toBe("counter");
      expect(types.get("process_resident_memory_bytes")).toBe("gauge");
      expect(types.get("blockx_build_info")).toBe("gauge");
      // Counters end in _total; no name has a unit other than the base units.
      for (const [name, type] of types) {
        if (type === "counter") expect(name).toMatch(/_total$/);
        expect(name).not.toMatch(/_(ms|milliseconds|kb|mb|percent)(_|$)/);
      }
      if (/worker/.test(id)) {
        expect(Object.fromEntries(["blockx_worker_task_duration_seconds", "blockx_worker_call_duration_seconds", "blockx_worker_calls_in_flight", "blockx_worker_slot_occupancy_ratio", "blockx_worker_rows_written_total", "blockx_executor_restarts_total", "blockx_executor_failures_total", "blockx_io_backend_request_seconds", "blockx_io_admission_limit"].map((n) => [n, types.get(n)]))).toEqual({
          blockx_worker_task_duration_seconds: "histogram",
          blockx_worker_call_duration_seconds: "histogram",
          blockx_worker_calls_in_flight: "gauge",
          blockx_worker_slot_occupancy_ratio: "gauge",
          blockx_worker_rows_written_total: "counter",
          blockx_executor_restarts_total: "counter",
          blockx_executor_failures_total: "counter",
          blockx_io_backend_request_seconds: "histogram",
          blockx_io_admission_limit: "gauge",
        });
        okCalls += Number(/^blockx_worker_call_duration_seconds_count\{outcome="OK"\} (\d+)$/m.exec(text)?.[1] ?? 0);
        userErrors += Number(/^blockx_worker_call_duration_seconds_count\{outcome="USER_ERROR"\} (\d+)$/m.exec(text)?.[1] ?? 0);
      }
      if (/coordinator/.test(id)) expect(types.get("blockx_coordinator_reservation_duration_seconds")).toBe("histogram");
    }
    expect(okCalls).toBeGreaterThan(6); // blocks 1..6 of the failing task at least, and the backfill's
    expect(userErrors).toBeGreaterThanOrEqual(1); // block 7
    expect(all.get("blockx_syncinvoker_request_duration_seconds")).toBe("histogram");

    // Every query of the Grafana dashboard names metrics some role exports.
    const dashboard = JSON.parse(readFileSync(join(ROOT, "deploy", "prometheus", "grafana-dashboard.json"), "utf8")) as { panels: { title: string; targets: { expr: string }[] }[] };
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));
    expect(exprs.length).toBeGreaterThan(10);
    const unknown: string[] = [];
    for (const expr of exprs) {
      const names = [...expr.matchAll(/\b(?:blockx|process)_[a-z0-9_]+/g)].map((m) => m[0]);
      expect(names.length).toBeGreaterThan(0);
      for (const n of names) {
        const base = n.replace(/_(bucket|sum|count)$/, "");
        const ok = all.has(n) || (all.get(base) === "histogram" && base !== n);
        if (!ok) unknown.push(`${n} in ${expr}`);
      }
    }
    expect(unknown).toEqual([]);
  }, 60_000);
});
