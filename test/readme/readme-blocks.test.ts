/**
 * The README's guide as a new user runs it: every `sh` block of the guide sections is extracted
 * and run as written, with bash -e, in a fresh folder holding only the built binary
 * (`dist/blockx`), `examples/` and the guide's `fn.py`, against a `blockx dev` the test starts
 * (the one substitution: the guide's placeholder path of `blockx-dev.env` becomes the real one).
 * A block that cannot run here carries a marker comment just above it,
 * `<!-- readme-test: not run: <why> -->` (the whole pipeline, a checkout, a real node): the
 * test lists them and insists that every other block ran and succeeded. A block that ends in a
 * server (`<!-- readme-test: serves until Ctrl-C -->`, the dashboard) runs until it prints its URL;
 * the test reads the page and its data there, then sends Ctrl-C (SIGINT to the block's process
 * group) and expects exit 0. Such a block gets UI_LISTEN=127.0.0.1:0 in its environment (its one
 * difference from a user's run: the default port may be taken on a machine running other tests).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BLOCKX_BINARY, BlockxProcess } from "../support/blockx-process";

const REPO = join(import.meta.dir, "..", "..");
const README = readFileSync(join(REPO, "README.md"), "utf8");
/** The sections a new user reads first: their every `sh` block runs (or says why not). */
const GUIDE_SECTIONS = [
  "## Two commands",
  "## A short guide",
  "## Build",
  "### Chains: real nodes through `blockdb` and `rpc` (CHAINS_CONFIG)",
  "## Try a function locally",
  "## The dashboard: `blockx ui`",
];
/** The guide's stand-in for the dev directory `blockx dev` prints. */
const DEV_ENV_PLACEHOLDER = "/tmp/blockx-dev-XXXXXX/blockx-dev.env";

interface Block {
  readonly section: string;
  readonly text: string;
  /** Why it is not run (its marker), or null. */
  readonly notRun: string | null;
  /** It ends in a server that runs until Ctrl-C. */
  readonly serves: boolean;
}

/** sectionText: from the heading to the next heading of the same or a higher level. */
function sectionText(heading: string): string {
  const start = README.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`README has no section ${heading}`);
  const level = heading.indexOf(" ");
  const rest = README.slice(start + heading.length + 2);
  const next = new RegExp(`^#{1,${level}} `, "m").exec(rest);
  return next ? rest.slice(0, next.index) : rest;
}

function blocksOf(section: string): Block[] {
  const out: Block[] = [];
  for (const m of sectionText(section).matchAll(/(?:<!-- readme-test: (?:not run: (.*?)|(serves until Ctrl-C)) -->\n)?```sh\n([\s\S]*?)```/g)) {
    out.push({ section, text: m[3]!, notRun: m[1] ?? null, serves: m[2] !== undefined });
  }
  return out;
}

function guideFunction(): string {
  const m = /```python\n([\s\S]*?)```/.exec(sectionText("## A short guide"));
  if (!m) throw new Error("README: no python block in the guide");
  return m[1]!;
}

const blocks = GUIDE_SECTIONS.flatMap(blocksOf);
let folder = "";
let dev: BlockxProcess;
let envFile = "";
/** What `blockx dev` said it started (the dashboard's data must show them). */
let endpoints: Record<string, string> = {};

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), "blockx-readme-"));
  mkdirSync(join(folder, "dist"));
  copyFileSync(BLOCKX_BINARY, join(folder, "dist", "blockx"));
  Bun.spawnSync(["chmod", "755", join(folder, "dist", "blockx")]);
  cpSync(join(REPO, "examples"), join(folder, "examples"), { recursive: true });
  writeFileSync(join(folder, "fn.py"), guideFunction());
  // Small: the machine runs other tests too. Everything else is dev's defaults.
  dev = BlockxProcess.spawn(["dev"], {
    ETCD_BIN: process.env.BLOCKX_ETCD_BIN!,
    DEV_DIR: join(folder, "dev"),
    DEV_WORKERS: "1",
    DEV_BUNDLE_WORKERS: "1",
    EXECUTOR_COUNT: "2",
    DEV_TERMINAL_LOG_LEVEL: "error",
  });
  const ready = (await dev.waitForLog((l) => l.msg === "dev ready", 90_000)) as unknown as { envFile: string; endpoints: Record<string, string> };
  envFile = ready.envFile;
  endpoints = ready.endpoints;
}, 120_000);

afterAll(async () => {
  await dev?.stop("SIGINT");
  rmSync(folder, { recursive: true, force: true });
}, 60_000);

async function runBlock(text: string) {
  const script = text.replaceAll(DEV_ENV_PLACEHOLDER, envFile);
  const p = Bun.spawn(["bash", "-e", "-o", "pipefail", "-c", script], {
    cwd: folder,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: folder },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, stdout, stderr };
}

/**
 * serveBlock runs a block that ends in a server in a process group of its own (setsid), waits for
 * the `blockx ui: http://...` line it prints on stderr, hands the URL to `check`, then sends SIGINT to
 * the group, as Ctrl-C would, and returns how the block ended.
 */
async function serveBlock(text: string, check: (url: string) => Promise<void>) {
  const script = text.replaceAll(DEV_ENV_PLACEHOLDER, envFile);
  const p = Bun.spawn(["setsid", "bash", "-e", "-o", "pipefail", "-c", script], {
    cwd: folder,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: folder, UI_LISTEN: "127.0.0.1:0" },
    stdout: "pipe",
    stderr: "pipe",
  });
  let stderr = "";
  const stdout = new Response(p.stdout).text();
  const reader = p.stderr.getReader();
  const decoder = new TextDecoder();
  let url = "";
  try {
    while (!url) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`exit ${await p.exited} before it served\n--- block\n${text}--- stderr\n${stderr}--- stdout\n${await stdout}`);
      stderr += decoder.decode(value);
      url = /: (http:\/\/\S+)$/m.exec(stderr)?.[1] ?? "";
    }
    const rest = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        stderr += decoder.decode(value);
      }
    })();
    try {
      await check(url);
    } finally {
      process.kill(-p.pid, "SIGINT");
    }
    const code = await p.exited;
    await rest;
    return { code, url, stdout: await stdout, stderr };
  } finally {
    if (p.exitCode === null) process.kill(-p.pid, "SIGKILL");
  }
}

describe("README guide blocks", () => {
  test("the guide sections have blocks to run, and every block that is not run says why", () => {
    expect(blocks.filter((b) => b.notRun === null).length).toBeGreaterThanOrEqual(2);
    expect(blocks.filter((b) => b.notRun !== null).map((b) => `${b.section}: ${b.notRun}`)).toEqual([
      "## Two commands: the whole pipeline (test/demo runs scripts/demo.sh; CI runs make test)",
      "## Build: needs the checkout (make build runs before the tests)",
      "### Chains: real nodes through `blockdb` and `rpc` (CHAINS_CONFIG): needs a real node (test/io runs the same against ganache)",
    ]);
  });

  for (const [i, block] of blocks.entries()) {
    if (block.notRun !== null) continue;
    if (block.serves) {
      test(`${block.section}, block ${i + 1}: serves as written (bash -e) against blockx dev, its page shows dev's cluster, and Ctrl-C stops it`, async () => {
        const r = await serveBlock(block.text, async (url) => {
          const page = await fetch(url);
          expect(page.status).toBe(200);
          expect(await page.text()).toContain("<title>BlockX dashboard</title>");
          // The data behind it: dev's Workers from etcd, and both Coordinators answering.
          // The printed URL carries the dashboard's token; a script sends it as a bearer token.
          const token = new URL(url).searchParams.get("token") ?? "";
          expect(token).not.toBe("");
          expect((await fetch(new URL("api/overview", url))).status).toBe(401);
          const o = (await (await fetch(new URL("api/overview", url), { headers: { authorization: `Bearer ${token}` } })).json()) as { workers: { addr: string }[]; coordinators: { cluster: string; error: string }[] };
          const workers = Object.entries(endpoints).filter(([id]) => /worker/.test(id)).map(([, a]) => a).sort();
          expect(o.workers.map((w) => w.addr).sort()).toEqual(workers);
          expect(o.coordinators.map((c) => [c.cluster, c.error]).sort()).toEqual([["block", ""], ["bundle", ""]]);
        });
        if (r.code !== 0) throw new Error(`exit ${r.code} after Ctrl-C\n--- block\n${block.text}--- stdout\n${r.stdout}--- stderr\n${r.stderr}`);
        expect(r.code).toBe(0);
      }, 120_000);
      continue;
    }
    test(`${block.section}, block ${i + 1}: runs as written (bash -e) against the built binary and blockx dev`, async () => {
      const r = await runBlock(block.text);
      if (r.code !== 0) throw new Error(`exit ${r.code}\n--- block\n${block.text}--- stdout\n${r.stdout}--- stderr\n${r.stderr}`);
      expect(r.code).toBe(0);
      if (block.text.includes("submit --function fn.py")) {
        expect(r.stdout).toMatch(/^state\s+SUCCEEDED$/m);
        expect(r.stdout).toMatch(/^block\s+tx_count/m); // the table command's rows
        expect(r.stderr).toMatch(/^task \S+ on 127\.0\.0\.1:\d+$/m);
      }
      if (block.text.includes("exec /tmp/inc.py 41")) expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, value: 42 });
    }, 180_000);
  }
});
