/**
 * Who may read the dashboard (issue 51, item 1), against the compiled `blockx ui` reading a real
 * Worker that runs a task with a live log, in Debian's headless chromium:
 * - the URL it prints (with its per-start token) opens the page; the page drops the token from
 *   the address bar, and the HttpOnly, SameSite=Strict cookie that first use set lets the plain
 *   address and a task link work after;
 * - without the token (a browser that never saw the URL, a script) and with a wrong one: 401, no data;
 * - under another Host name that resolves to this machine (DNS rebinding: chromium is told the
 *   attacker's name is 127.0.0.1): 403, even with the right token;
 * - every response carries a Content-Security-Policy that admits only the page's own script;
 * - 100 log pages of the running task, each closed (navigated away) after its first line, leave
 *   the dashboard serving: log streams are cancelled with their page (before, the 33rd page got
 *   503 until the task ended), and UI_MAX_STREAMS pages can still be open at once after.
 * - a wider bind warns, in one line naming it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { BlockxProcess } from "../support/blockx-process";
import { HeadlessChromium } from "../support/chromium";
import { TestCluster } from "../support/cluster";
import { inputsTask, WorkerClient } from "../support/worker-client";

const RUN = Date.now().toString(36);
const TASK = `ui-access-${RUN}`;
/** A task that logs a line per call, for minutes (afterAll cancels it): its log page always has lines to follow. */
const SOURCE = 'import time\n\ndef main(ctx, input):\n    ctx.log("line %d" % input)\n    time.sleep(1.0)\n    return input\n';
const REBOUND = "rebound.attacker.example";

let cluster: TestCluster;
let worker: WorkerClient;
let ui: BlockxProcess;
let url = ""; // as printed: http://127.0.0.1:P/?token=T
let address = ""; // http://127.0.0.1:P/
let token = "";
let port = "";
let browser: HeadlessChromium;

beforeAll(async () => {
  cluster = new TestCluster();
  const w = await cluster.worker({ EXECUTOR_COUNT: "2" });
  worker = new WorkerClient(w.addr);
  const slot = await worker.requestTaskSlot(TASK, 60_000);
  if (!slot.ok) throw new Error(`slot: ${slot.details}`);
  const sub = await worker.submitTask(inputsTask(TASK, SOURCE, Array.from({ length: 100_000 }, (_, i) => i)), slot.value.slotId);
  if (!sub.ok) throw new Error(`submit: ${sub.details}`);
  ui = BlockxProcess.spawn(["ui"], { ETCD_ENDPOINTS: cluster.etcd, UI_LISTEN: "127.0.0.1:0", UI_REFRESH_MS: "500" });
  url = await ui.dashboardUrl();
  const u = new URL(url);
  token = u.searchParams.get("token")!;
  port = u.port;
  address = `${u.origin}/`;
  browser = await HeadlessChromium.start([`--host-resolver-rules=MAP ${REBOUND} 127.0.0.1`]);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await worker?.cancelTask(TASK).catch(() => {});
  worker?.close();
  await ui?.stop("SIGINT");
  await cluster?.stop();
}, 30_000);

/** pageText: what the browser shows now (a refused request's JSON, or the page). */
const pageText = () => browser.evaluate<string>("document.body ? document.body.innerText : ''");

describe("the dashboard's access checks, in chromium against `blockx ui`", () => {
  test("the printed URL carries a token of its own start, on loopback", () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{32}$/);
    expect(ui.stderr).not.toContain("warning");
  });

  test("without the token, and with a wrong one, the dashboard answers 401 and no data", async () => {
    await browser.navigate(address);
    const missing = await browser.waitUntil<string>(`document.body && document.body.innerText.includes('token') ? document.body.innerText : ''`, 15_000);
    expect(missing).toContain("no dashboard token");
    expect(missing).not.toContain("Workers");
    await browser.navigate(`${address}?token=${token.slice(0, -1)}x`);
    expect(await browser.waitUntil<string>(`document.body && document.body.innerText.includes('wrong') ? document.body.innerText : ''`, 15_000)).toContain("wrong dashboard token");
    for (const path of ["api/overview", `api/task?id=${TASK}`, `api/logs?id=${TASK}`, "api/events"]) {
      const r = await fetch(new URL(path, address));
      expect(r.status).toBe(401);
      expect(await r.text()).not.toContain(TASK);
    }
  }, 60_000);

  test("a page under another Host name (DNS rebinding) is refused with 403, even with the right token", async () => {
    await browser.navigate(`http://${REBOUND}:${port}/?token=${token}`);
    const text = await browser.waitUntil<string>(`document.body && document.body.innerText.includes('Host') ? document.body.innerText : ''`, 15_000);
    expect(text).toContain(`is not a name this dashboard serves`);
    const api = await fetch(new URL(`api/overview?token=${token}`, address), { headers: { host: `${REBOUND}:${port}` } });
    expect(api.status).toBe(403);
    expect(await api.text()).not.toContain(TASK);
  }, 30_000);

  test("the printed URL opens the dashboard; the token leaves the address bar, and its HttpOnly cookie opens the plain address and a task's page", async () => {
    await browser.navigate(url);
    await browser.waitUntil(`document.querySelector('#tasks tr[data-task="${TASK}"]') !== null`, 30_000);
    expect(await browser.evaluate<string>("location.href")).toBe(address);
    expect(await browser.evaluate<string>("document.cookie")).toBe(""); // HttpOnly: no script reads it
    await browser.navigate("about:blank");
    await browser.navigate(`${address}#/task/${TASK}`);
    await browser.waitUntil(`document.querySelector('#logs') && document.querySelector('#logs').textContent.includes('line ')`, 30_000);
  }, 60_000);

  test("every response carries a Content-Security-Policy admitting only the page's own script and style", async () => {
    const page = await fetch(url);
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(page.headers.get("set-cookie")).toBe(`blockx_ui_${port}=${token}; HttpOnly; SameSite=Strict; Path=/`);
    const refused = await fetch(address);
    expect(refused.headers.get("content-security-policy")).toBe(csp);
    // An inline script the page did not ship is refused by the browser.
    await browser.navigate(address);
    await browser.waitUntil(`document.querySelector('#workers') !== null`, 30_000);
    const ran = await browser.evaluate<boolean>(
      `new Promise((resolve) => { window.__injected = false; const s = document.createElement('script'); s.textContent = 'window.__injected = true'; document.body.append(s); setTimeout(() => resolve(window.__injected), 100); })`,
    );
    expect(ran).toBe(false);
  }, 60_000);

  test("100 log pages of a running task, each closed after its first line, leave the dashboard serving; UI_MAX_STREAMS (32) pages can be open at once after", async () => {
    const linesShown = `document.querySelector('#logs') && document.querySelector('#logs').textContent.includes('line ') && !document.querySelector('#logs').textContent.includes('log stream:')`;
    // The printed URL once (the cookie), then the task's page by its plain link, 100 times.
    await browser.navigate(url);
    await browser.waitUntil(`document.querySelector('#workers') !== null`, 30_000);
    for (let i = 0; i < 100; i++) {
      await browser.navigate("about:blank");
      await browser.navigate(`${address}#/task/${TASK}`);
      try {
        await browser.waitUntil(linesShown, 30_000);
      } catch (e) {
        throw new Error(`log page ${i + 1} of 100: ${(e as Error).message}`);
      }
    }
    await browser.navigate("about:blank");
    // The closed pages' streams are gone: 32 open at once all follow the log (the 33rd is refused, naming the bound).
    const aborts: AbortController[] = [];
    // Held until the end: a stream nobody references may be collected, and its connection closed.
    const readers: ReadableStreamDefaultReader<Uint8Array>[] = [];
    try {
      for (let i = 0; i < 32; i++) {
        const a = new AbortController();
        aborts.push(a);
        // The closed pages' last streams may take a moment to be noticed: a refusal here is retried.
        for (;;) {
          const r = await fetch(new URL(`api/logs?id=${TASK}`, address), { headers: { authorization: `Bearer ${token}` }, signal: a.signal });
          if (r.status === 200) {
            const reader = r.body!.getReader();
            readers.push(reader);
            const first = new TextDecoder().decode((await reader.read()).value);
            expect(first).toContain("event: line");
            break;
          }
          expect(r.status).toBe(503);
          await Bun.sleep(100);
        }
      }
      // Past them, a page is refused naming the bound (a few more tries: a held stream whose Worker
      // stream failed gives its place back, as a closed page does).
      let refusal = "";
      for (let i = 0; i < 10 && !refusal; i++) {
        const a = new AbortController();
        aborts.push(a);
        const extra = await fetch(new URL(`api/logs?id=${TASK}`, address), { headers: { authorization: `Bearer ${token}` }, signal: a.signal });
        if (extra.status === 503) refusal = await extra.text();
        else readers.push(extra.body!.getReader());
      }
      expect(refusal).toContain("too many open dashboards (at most 32, UI_MAX_STREAMS)");
    } finally {
      for (const a of aborts) a.abort();
    }
    const overview = await fetch(new URL("api/overview", address), { headers: { authorization: `Bearer ${token}` } });
    expect(overview.status).toBe(200);
  }, 300_000);

  test("200 refused requests (a page hammering the port) do not write 200 log lines: one line now and then, with the count", async () => {
    const before = ui.lines.filter((l) => l.msg === "dashboard request refused").length;
    for (let i = 0; i < 200; i++) expect((await fetch(new URL("api/overview", address))).status).toBe(401);
    const lines = ui.lines.filter((l) => l.msg === "dashboard request refused");
    expect(lines.length - before).toBeLessThan(20);
    expect(lines.every((l) => typeof l.refused === "number" && l.refused >= 1)).toBe(true);
  }, 60_000);

  test("a bind beyond loopback starts with a one-line warning naming it", async () => {
    const wide = BlockxProcess.spawn(["ui"], { ETCD_ENDPOINTS: cluster.etcd, UI_LISTEN: ":0" });
    try {
      await wide.dashboardUrl();
      const warnings = wide.stderr.split("\n").filter((l) => l.includes("warning"));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toStartWith("blockx ui: warning: UI_LISTEN=:0 serves the dashboard on every interface of this host");
    } finally {
      await wide.stop("SIGINT");
    }
  }, 30_000);
});
