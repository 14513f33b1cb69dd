/**
 * One `blockx dev` cluster (the compiled binary, 2 block Workers and a bundle Worker) seen the way an
 * operator sees it. A 60,000-block backfill runs while a second task fails on block 7 (the block
 * cluster's work) and three bundle tasks run on the bundle cluster.
 * - The dashboard (`blockx ui` inside dev, its URL in blockx-dev.env, and a `blockx ui` started the
 *   README's way, from blockx-dev.env: through the proxy) opened in Debian's headless chromium at
 *   1400 px: the workers view lists every Worker; the backfill's progress rises between two page
 *   loads; each Coordinator shows its own reservations (the block one the block tasks, the bundle
 *   one the bundle tasks), on both dashboards; the backfill's page charts its calls per second and
 *   call latency and the Workers view each Worker's busy executors, with data points; times read
 *   as times; no page scrolls sideways; the failing task's page shows its story and its
 *   traceback. Screenshots go to test-output/dashboard/.
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
let ui: BlockxProcess;
let uiUrl = "";
// Ids without a raw epoch in them: the page must show none (times are shown as times).
const RUN = Date.now().toString(36);
const backfillId = `ui-backfill-${RUN}`;
const failingId = `ui-failing-${RUN}`;
// A long id among them: the tables must still fit the window.
const bundleIds = [`ui-bundle-a-${RUN}`, `ui-bundle-b-${RUN}`, `ui-bundle-with-a-long-task-id-so-that-the-tables-must-fit-it-${RUN}-${"x".repeat(40)}`];

/** backfill: one call per block from..to of the local test chain, by the FUNCTIONS_DIR function `name`, rows to `table`. */
function backfill(taskId: string, name: string, from: number, to: number, table: string): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({ function: { name, entry: "main" }, config: { $case: "blockTable", blockTable: { chain: "ethereum", fromBlock: from, toBlock: to } } }),
    outputs: [{ handler: { $case: "blockTableWrite", blockTableWrite: { table } } }],
  });
}

/** bundles: calls of `size` blocks over from..to on the bundle cluster, by the FUNCTIONS_DIR function `name`, rows to `table`. */
function bundles(taskId: string, name: string, from: number, to: number, size: number, table: string): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({ function: { name, entry: "main" }, config: { $case: "blockBundle", blockBundle: { chain: "ethereum", fromBlock: from, toBlock: to, bundleSize: size } } }),
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
  // Slow enough (2 ms a block, at most about 1,000 blocks a second on 2 executors) that 60,000 blocks are
  // still running through every test below (afterAll cancels it).
  writeFileSync(join(dir, "functions", "slow_rows.py"), 'import time\n\ndef main(ctx, input):\n    ctx.log("block %d" % input["blockNumber"])\n    time.sleep(0.002)\n    return [{"block": input["blockNumber"]}]\n');
  writeFileSync(join(dir, "functions", "bundle_rows.py"), 'def main(ctx, input):\n    return [{"block": b} for b in range(input["fromBlock"], input["toBlock"] + 1)]\n');
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
  await client.submit(backfill(backfillId, "slow_rows", 1, 60_000, "ui_backfill"));
  const failing = await client.submit(backfill(failingId, "fails_at_7", 1, 50, "ui_failing"));
  await client.watch(failing).catch(() => {}); // ends FAILED
  // The bundle cluster's own work: three tasks, reserved through the bundle Coordinator alone.
  for (const [i, id] of bundleIds.entries()) await client.watch(await client.submit(bundles(id, "bundle_rows", 100 * i + 1, 100 * i + 100, 10, "ui_bundles")));
  // `blockx ui` as the README starts it: the client variables of blockx-dev.env (TLS, the proxy's socket), its own port.
  ui = BlockxProcess.spawn(["ui"], { ...env, UI_LISTEN: "127.0.0.1:0" });
  await ui.waitForLog((l) => l.msg === "dashboard listening", 30_000);
  // The URL with its token is printed on stderr (the log line names the address only).
  for (; !uiUrl; await Bun.sleep(50)) uiUrl = /^blockx ui: (http:\/\/\S+)$/m.exec(ui.stderr)?.[1] ?? "";
  mkdirSync(SHOTS, { recursive: true });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await ui?.stop("SIGINT");
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
    expect(first).toBeLessThan(60_000);

    await browser.navigate("about:blank");
    await browser.navigate(ready.ui);
    const second = await browser.waitUntil<number>(`(() => { const d = ${doneOf}; return d > ${first} ? d : 0; })()`, 60_000);
    expect(second).toBeGreaterThan(first);
    await browser.screenshot(join(SHOTS, "overview-2.png"));
  }, 150_000);

  test("each Worker's executors, and every Coordinator's reservation outcomes with the reservations just made", async () => {
    browser ??= await HeadlessChromium.start();
    await browser.navigate("about:blank");
    await browser.navigate(ready.ui);
    const workerCount = Object.keys(ready.endpoints).filter((id) => /worker/.test(id)).length;
    // The executor summary rides on heartbeats (refreshed every HEARTBEAT_REFRESH_MS, 5 s), so it may lag the pool's start.
    const executorCells = `[...document.querySelectorAll('#workers tr[data-worker] td.executors')].map((c) => c.textContent)`;
    const cells = await browser.waitUntil<string[]>(`(() => { const c = ${executorCells}; return c.length === ${workerCount} && c.every((t) => t.startsWith('2/2 ready')) ? c : null; })()`, 30_000);
    expect(cells).toHaveLength(workerCount);

    const coordinators = Object.entries(ready.endpoints).filter(([id]) => /coordinator/.test(id)).map(([, a]) => a).sort();
    const rows = await browser.waitUntil<{ addr: string; reserved: string }[]>(
      `(() => { const r = [...document.querySelectorAll('#coordinators tr[data-coordinator]')].map((tr) => ({ addr: tr.dataset.coordinator, reserved: tr.querySelector('td[data-outcome="reserved"]')?.textContent ?? '' })); return r.length === ${coordinators.length} ? r : null; })()`,
      30_000,
    );
    expect(rows.map((r) => r.addr).sort()).toEqual(coordinators);
    // beforeAll reserved two slots through the block Coordinator (the backfill and the failing task), each on its first try.
    const block = rows.find((r) => r.addr === ready.endpoints.coordinator)!;
    expect(Number(block.reserved.split(" ")[0])).toBeGreaterThanOrEqual(2);
    const recent = await browser.evaluate<string[][]>(`[...document.querySelectorAll('#reservations tbody tr')].map((tr) => [...tr.children].map((td) => td.textContent))`);
    const backfillRow = recent.find((cells) => cells[3] === backfillId);
    expect(backfillRow?.[4]).toBe("reserved");
    expect(backfillRow?.[5]).toBe((await client.locate(backfillId)).workerAddr);
    await browser.screenshot(join(SHOTS, "coordinators.png"));
  }, 90_000);

  // The block cluster reserved the backfill and the failing task, the bundle cluster the three
  // bundle tasks: each Coordinator's row and recent reservations must be its own. Through the
  // proxy both Coordinators are one socket, which once gave the bundle row the block one's numbers.
  for (const which of ["dev's own dashboard (each Coordinator dialled directly)", "blockx ui started from blockx-dev.env (through the proxy)"]) {
    test(`each Coordinator shows its own reservations: ${which}`, async () => {
      browser ??= await HeadlessChromium.start();
      await browser.navigate("about:blank");
      await browser.navigate(which.startsWith("dev") ? ready.ui : uiUrl);
      type Row = { cluster: string; total: number; started: number; reserved: string };
      const rows = await browser.waitUntil<Row[]>(
        `(() => { const r = [...document.querySelectorAll('#coordinators tr[data-coordinator]')].map((tr) => ({ cluster: tr.dataset.cluster, total: Number(tr.dataset.total), started: Number(tr.dataset.started), reserved: tr.querySelector('td[data-outcome="reserved"]')?.textContent ?? '' })); return r.length === 2 && r.every((x) => x.started > 0) ? r : null; })()`,
        30_000,
      );
      const block = rows.find((r) => r.cluster === "block")!;
      const bundle = rows.find((r) => r.cluster === "bundle")!;
      expect(Number(block.reserved.split(" ")[0])).toBeGreaterThanOrEqual(2);
      expect(Number(bundle.reserved.split(" ")[0])).toBeGreaterThanOrEqual(3);
      const recent = await browser.evaluate<{ cluster: string; task: string }[]>(`[...document.querySelectorAll('#reservations tbody tr')].map((tr) => ({ cluster: tr.dataset.cluster, task: tr.dataset.task }))`);
      const tasksOf = (cluster: string) => recent.filter((r) => r.cluster === cluster).map((r) => r.task);
      expect(tasksOf("block")).toEqual(expect.arrayContaining([backfillId, failingId]));
      expect(tasksOf("bundle")).toEqual(expect.arrayContaining(bundleIds));
      expect(tasksOf("block").filter((t) => bundleIds.includes(t))).toEqual([]);
      expect(tasksOf("bundle").filter((t) => t === backfillId || t === failingId)).toEqual([]);
      // What the Coordinators themselves say, asked directly: the page shows each one's count.
      const direct = await client.reservationOutcomes(10);
      for (const r of [block, bundle]) expect(r.total).toBe(direct.find((d) => d.cluster === r.cluster)!.outcomes!.total);
      await browser.screenshot(join(SHOTS, which.startsWith("dev") ? "coordinators-dev.png" : "coordinators-ui-proxy.png"));
    }, 60_000);
  }

  test("the running backfill's page charts its calls per second and call latency, and the Workers view each Worker's busy executors, with data points", async () => {
    browser ??= await HeadlessChromium.start();
    await browser.navigate("about:blank");
    await browser.navigate(`${ready.ui}#/task/${backfillId}`);
    // The page redraws every 2 s while the task runs; each redraw may add a point.
    const points = await browser.waitUntil<{ rate: number; latency: number }>(
      `(() => { const n = (c) => Number(document.querySelector('svg[data-chart="' + c + '"]')?.dataset.points ?? 0); return n('rate') >= 3 && n('latency') >= 3 && document.querySelector('#task-state')?.textContent === 'RUNNING' ? { rate: n('rate'), latency: n('latency') } : null; })()`,
      60_000,
    );
    expect(points.rate).toBeGreaterThanOrEqual(3);
    // Drawn: a line through the points, and the values behind it make sense (slow_rows sleeps 2 ms a block).
    expect(await browser.evaluate<number>(`document.querySelector('svg[data-chart="rate"] polyline').getAttribute('points').trim().split(' ').length`)).toBeGreaterThanOrEqual(3);
    const charts = await browser.evaluate<{ rate: [number, number][]; latencyMs: [number, number][] }>(`fetch('/api/task?id=${backfillId}').then((r) => r.json()).then((d) => d.charts)`);
    expect(charts.rate.some(([, v]) => v > 0)).toBe(true);
    expect(charts.latencyMs.every(([, v]) => v >= 2)).toBe(true);
    expect(await browser.evaluate<boolean>(`document.documentElement.scrollWidth <= document.documentElement.clientWidth`)).toBe(true);
    await browser.screenshot(join(SHOTS, "task-running-charts.png"));

    // The Worker running the backfill: busy executors at several heartbeats, some of them busy.
    const worker = (await client.locate(backfillId)).workerAddr;
    await browser.navigate("about:blank");
    await browser.navigate(ready.ui);
    const busyPoints = await browser.waitUntil<number>(`(() => { const n = Number(document.querySelector('#workers tr[data-worker="${worker}"] svg[data-chart="busy"]')?.dataset.points ?? 0); return n >= 2 ? n : 0; })()`, 60_000);
    expect(busyPoints).toBeGreaterThanOrEqual(2);
    const busy = await browser.evaluate<[number, number][]>(`fetch('/api/overview').then((r) => r.json()).then((o) => o.busyExecutors['${worker}'].busy)`);
    expect(busy.some(([, n]) => n > 0)).toBe(true);
  }, 150_000);

  test("at 1400 px no view scrolls sideways, and times read as times (no epoch milliseconds)", async () => {
    browser ??= await HeadlessChromium.start();
    const fits = `document.documentElement.scrollWidth <= document.documentElement.clientWidth && [...document.querySelectorAll('table')].every((t) => t.getBoundingClientRect().right <= document.documentElement.clientWidth)`;
    expect(await browser.evaluate<number>(`window.innerWidth`)).toBe(1400);
    for (const url of [ready.ui, uiUrl]) {
      await browser.navigate("about:blank");
      await browser.navigate(url);
      await browser.waitUntil<boolean>(`document.querySelectorAll('#tasks tr[data-task]').length >= 5 && document.querySelectorAll('#coordinators tr[data-coordinator]').length === 2`, 30_000);
      if (!(await browser.evaluate<boolean>(fits))) {
        await browser.screenshot(join(SHOTS, "overview-too-wide.png"));
        const widths = await browser.evaluate<string>(`JSON.stringify({ page: document.documentElement.scrollWidth, window: document.documentElement.clientWidth, tables: [...document.querySelectorAll('table')].map((t) => [t.id, Math.round(t.getBoundingClientRect().right)]) })`);
        throw new Error(`${url} scrolls sideways at 1400 px: ${widths}`);
      }
      expect(await browser.evaluate<string>(`document.querySelector('#view').textContent`)).not.toMatch(/\b1\d{12}\b/);
    }
    await browser.screenshot(join(SHOTS, "overview-fits.png"));
    await browser.navigate(`${ready.ui}#/task/${failingId}`);
    await browser.waitUntil<boolean>(`document.querySelectorAll('#story tbody tr').length > 0`, 30_000);
    expect(await browser.evaluate<boolean>(fits)).toBe(true);
    const story = await browser.evaluate<string>(`document.querySelector('#story').textContent`);
    // "slot ... allocated until <a time> (+<how long>)", never the raw number.
    expect(story).not.toMatch(/\b1\d{12}\b/);
    expect(story).toMatch(/allocated until \d\d:\d\d:\d\d \(\+[\d.]+ (ms|s|min)\)/);
    expect(story).toMatch(/\d\d:\d\d:\d\d\.\d{3} \([\d.]+ (ms|s|min) ago\)/);
    expect(await browser.evaluate<string>(`document.querySelector('.meta').textContent`)).toMatch(/accepted \d\d:\d\d:\d\d \([\d.]+ (ms|s|min) ago\)/);
  }, 90_000);

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
