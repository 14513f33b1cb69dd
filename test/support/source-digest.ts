import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const REPO = join(import.meta.dir, "..", "..");

/**
 * sourceDigest is the Makefile's SOURCE_DIGEST of the tree: `sha256sum` over the binary's sources
 * (src/**\/*.ts but tests, src's embedded pages src/**\/*.html, executor-py/blockx_executor/**\/*.py and client-py/blockx/**\/*.py (shipped beside the executor), deploy/systemd/* (embedded for
 * `blockx install`), package.json) in byte order,
 * hashed again, first 16 hex digits. The same files as the Makefile's SOURCES.
 */
export function sourceDigest(repo = REPO): string {
  const under = (dir: string, keep: (f: string) => boolean) =>
    (readdirSync(join(repo, dir), { recursive: true }) as string[]).map((f) => `${dir}/${f}`).filter(keep);
  const files = [
    ...under("src", (f) => (f.endsWith(".ts") && !f.endsWith(".test.ts")) || f.endsWith(".html")),
    ...under("executor-py/blockx_executor", (f) => f.endsWith(".py")),
    ...under("client-py/blockx", (f) => f.endsWith(".py")),
    ...under("deploy/systemd", () => true),
    "package.json",
  ].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const listing = files.map((f) => `${createHash("sha256").update(readFileSync(join(repo, f))).digest("hex")}  ${f}\n`).join("");
  return createHash("sha256").update(listing).digest("hex").slice(0, 16);
}

/** binaryDigest reads the digest a built binary was made from (`blockx version`). */
export function binaryDigest(binary: string): string {
  const out = Bun.spawnSync([binary, "version"]).stdout.toString();
  return /sources ([0-9a-f]{16}|source)\)/.exec(out)?.[1] ?? "unknown";
}
