import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processesMentioning } from "./proc-scan";

/** CHROMIUM: Debian's chromium (`make deps` installs it). */
export const CHROMIUM = process.env.BLOCKX_CHROMIUM_BIN ?? "/usr/bin/chromium";

/**
 * HeadlessChromium drives Debian's chromium over the DevTools protocol (a WebSocket, no npm
 * package): navigate, evaluate an expression in the page, wait until one holds, screenshot.
 * It is started through `setpriv --pdeathsig KILL` so that it dies with the test process.
 */
export class HeadlessChromium {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: Record<string, unknown>) => void; reject: (e: Error) => void }>();

  private constructor(
    private readonly proc: Bun.Subprocess,
    private readonly ws: WebSocket,
    private readonly profileDir: string,
  ) {
    ws.addEventListener("message", (ev) => {
      const msg = JSON.parse(String(ev.data)) as { id?: number; result?: Record<string, unknown>; error?: { message: string } };
      const p = msg.id === undefined ? undefined : this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id!);
      if (msg.error) p.reject(new Error(msg.error.message));
      else p.resolve(msg.result ?? {});
    });
  }

  /** start; `extraArgs` go on chromium's command line (`--host-resolver-rules=MAP name 127.0.0.1`: a name that resolves here, as a rebinding attacker's would). */
  static async start(extraArgs: readonly string[] = []): Promise<HeadlessChromium> {
    const profileDir = mkdtempSync(join(tmpdir(), "blockx-chromium-"));
    const proc = Bun.spawn(
      ["setpriv", "--pdeathsig", "KILL", "--", CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
        "--window-size=1400,900", "--remote-debugging-port=0", `--user-data-dir=${profileDir}`, ...extraArgs, "about:blank"],
      // Its TMPDIR is the profile too: chromium puts its singleton socket's folder there, and the
      // profile's removal takes it along (else an org.chromium.Chromium.* folder stays in /tmp).
      { stdout: "ignore", stderr: "pipe", env: { ...process.env, TMPDIR: profileDir } },
    );
    // chromium prints "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID" on stderr.
    const reader = proc.stderr.getReader();
    let text = "";
    let port = "";
    while (!port) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`chromium exited before listening: ${text.slice(-2000)}`);
      text += new TextDecoder().decode(value);
      port = /DevTools listening on ws:\/\/[^:]+:(\d+)\//.exec(text)?.[1] ?? "";
    }
    void (async () => {
      while (!(await reader.read()).done); // keep draining so chromium never blocks on stderr
    })();
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { type: string; webSocketDebuggerUrl: string }[];
    const page = targets.find((t) => t.type === "page");
    if (!page) throw new Error(`chromium has no page target: ${JSON.stringify(targets)}`);
    const ws = new WebSocket(page.webSocketDebuggerUrl);
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener("open", () => resolve(), { once: true });
      ws.addEventListener("error", () => reject(new Error("DevTools websocket failed")), { once: true });
    });
    const c = new HeadlessChromium(proc, ws, profileDir);
    await c.send("Page.enable");
    return c;
  }

  send(method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    this.ws.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
  }

  async navigate(url: string): Promise<void> {
    await this.send("Page.navigate", { url });
  }

  /** evaluate returns the JSON value of `expression` in the page, awaited when it is a promise (exceptions become errors). */
  async evaluate<T>(expression: string): Promise<T> {
    const r = (await this.send("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true })) as { result?: { value?: T }; exceptionDetails?: { text: string } };
    if (r.exceptionDetails) throw new Error(`${expression}: ${r.exceptionDetails.text}`);
    return r.result?.value as T;
  }

  /** waitUntil polls `expression` until it gives a truthy value, which it returns; it fails after `timeoutMs`, naming the last value. */
  async waitUntil<T>(expression: string, timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    for (;;) {
      try {
        last = await this.evaluate<T>(expression);
        if (last) return last as T;
      } catch (e) {
        last = (e as Error).message; // the page is still loading
      }
      if (Date.now() > deadline) throw new Error(`page never satisfied ${expression} within ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
      await Bun.sleep(200);
    }
  }

  async screenshot(path: string): Promise<void> {
    const r = (await this.send("Page.captureScreenshot", { format: "png" })) as { data: string };
    await Bun.write(path, Buffer.from(r.data, "base64"));
  }

  async close(): Promise<void> {
    try {
      this.ws.close();
    } catch {}
    this.proc.kill("SIGKILL");
    await this.proc.exited;
    // The browser's helpers (renderer, network, storage) outlive it briefly and may still write
    // to the profile: remove it once none of them is left, or the folder stays in /tmp.
    for (const until = Date.now() + 5_000; processesMentioning(this.profileDir).length > 0 && Date.now() < until; ) await Bun.sleep(50);
    rmSync(this.profileDir, { recursive: true, force: true });
  }
}
