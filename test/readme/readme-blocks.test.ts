/**
 * The README's guide as a new user runs it: every `sh` block of the guide sections is extracted
 * and run as written, with bash -e, in a fresh folder holding only the built binary
 * (`dist/blockx`), `examples/` and the guide's `fn.py`, against a `blockx dev` the test starts
 * (the one substitution: the guide's placeholder path of `blockx-dev.env` becomes the real one).
 * A block that cannot run here carries a marker comment just above it,
 * `<!-- readme-test: not run: <why> -->` (the whole pipeline, a checkout, a real node): the
 * test lists them and insists that every other block ran and succeeded.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BLOCKX_BINARY, BlockxProcess } from "../support/blockx-process";

const REPO = join(import.meta.dir, "..", "..");
const README = readFileSync(join(REPO, "README.md"), "utf8");
/** The sections a new user reads first: their every `sh` block runs (or says why not). */
const GUIDE_SECTIONS = ["## Two commands", "## A short guide", "## Build", "### Chains: real nodes through `blockdb` and `rpc` (CHAINS_CONFIG)", "## Try a function locally"];
/** The guide's stand-in for the dev directory `blockx dev` prints. */
const DEV_ENV_PLACEHOLDER = "/tmp/blockx-dev-XXXXXX/blockx-dev.env";

interface Block {
  readonly section: string;
  readonly text: string;
  /** Why it is not run (its marker), or null. */
  readonly notRun: string | null;
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
  for (const m of sectionText(section).matchAll(/(?:<!-- readme-test: not run: (.*?) -->\n)?```sh\n([\s\S]*?)```/g)) {
    out.push({ section, text: m[2]!, notRun: m[1] ?? null });
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
  envFile = ((await dev.waitForLog((l) => l.msg === "dev ready", 90_000)) as unknown as { envFile: string }).envFile;
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
