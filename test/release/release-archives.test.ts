/**
 * The release archives as an operator gets them: `make dist` builds both (linux-x64 and
 * linux-arm64) from a snapshot of the working tree into a folder of the test's; SHA256SUMS checks with `sha256sum -c`; each archive holds
 * what the README promises (binary, systemd/, README-operations.md, LICENSE, THIRD-PARTY-LICENSES.md)
 * with fixed owners, times and modes; the x64 binary from the archive runs a call from an empty
 * folder in its sandbox, and so does the arm64 one under qemu-user-static (Debian's, over the arm64 C
 * library `make deps` unpacks; without the sandbox, which emulation's paths skew: see the test). A second `make dist` of the same commit gives byte-identical archives; when it
 * does not, the test names the members that differ.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { sourceDigest } from "../support/source-digest";

const REPO = join(import.meta.dir, "..", "..");
const VERSION = (JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string }).version;
const BUN_VERSION = (JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { devDependencies: Record<string, string> }).devDependencies["bun-types"];
const ARM64_LIBC = join(REPO, ".cache", "arm64-libc", "root", "usr", "aarch64-linux-gnu");
const TARGETS = ["linux-x64", "linux-arm64"] as const;

let dir = "";
let commit = "";
let epoch = "";
/** The snapshot of the tree both builds compile, and its sources' digest. */
let tree = "";
let digest = "";

function run(cmd: string[], opts: { cwd?: string; env?: Record<string, string | undefined> } = {}) {
  const p = Bun.spawnSync(cmd, { cwd: opts.cwd ?? REPO, env: { ...process.env, ...opts.env }, stdout: "pipe", stderr: "pipe" });
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() };
}

function must(cmd: string[], opts: { cwd?: string; env?: Record<string, string | undefined> } = {}): string {
  const r = run(cmd, opts);
  if (r.code !== 0) throw new Error(`${cmd.join(" ")}: exit ${r.code}\n${r.stderr.slice(-3000)}`);
  return r.stdout;
}

/**
 * snapshotTree copies the working tree (tracked and untracked files git does not ignore, with
 * their times, so make sees its stamps up to date) to `to`, with node_modules and .cache linked:
 * both builds compile this one frozen copy, so an edit made in the checkout meanwhile cannot make
 * them differ. It is the tree under test, uncommitted changes included.
 */
function snapshotTree(to: string): void {
  for (const f of must(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]).split("\0")) {
    if (f === "" || !existsSync(join(REPO, f))) continue; // a file deleted but not yet staged
    mkdirSync(dirname(join(to, f)), { recursive: true });
    cpSync(join(REPO, f), join(to, f), { preserveTimestamps: true });
  }
  symlinkSync(join(REPO, "node_modules"), join(to, "node_modules"));
  symlinkSync(join(REPO, ".cache"), join(to, ".cache"));
}

/** makeDist runs `make dist` in the snapshot into `out`, pinned to one commit and its time (the test's two builds must be of one commit). */
function makeDist(out: string): void {
  must(["make", "-s", "--no-print-directory", "dist", `DIST_DIR=${out}`], { cwd: tree, env: { BLOCKX_COMMIT: commit, SOURCE_DATE_EPOCH: epoch } });
}

const archive = (target: string) => `blockx-${VERSION}-${target}.tar.gz`;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "blockx-release-"));
  commit = must(["git", "rev-parse", "--short", "HEAD"]).trim();
  epoch = must(["git", "log", "-1", "--format=%ct"]).trim();
  tree = join(dir, "tree");
  snapshotTree(tree);
  digest = sourceDigest(tree);
  makeDist(join(dir, "first"));
  for (const t of TARGETS) {
    mkdirSync(join(dir, t));
    must(["tar", "xzf", join(dir, "first", archive(t)), "-C", join(dir, t)]);
  }
}, 240_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("make dist", () => {
  test("SHA256SUMS lists both archives and checks with sha256sum -c", () => {
    expect(readdirSync(join(dir, "first")).sort()).toEqual(["SHA256SUMS", ...TARGETS.map(archive)].sort());
    const sums = readFileSync(join(dir, "first", "SHA256SUMS"), "utf8");
    expect(sums.trim().split("\n").map((l) => l.split(/\s+/)[1]).sort()).toEqual(TARGETS.map(archive).sort());
    const r = run(["sha256sum", "-c", "SHA256SUMS"], { cwd: join(dir, "first") });
    expect(r.stdout).toBe(TARGETS.map(archive).sort().map((a) => `${a}: OK\n`).join(""));
    expect(r.code).toBe(0);
  });

  test("each archive holds the binary, the units, the operations guide, LICENSE and the third-party licences, owned by root with fixed times and modes", () => {
    const units = readdirSync(join(tree, "deploy", "systemd")).sort();
    const buildDate = new Date(Number(epoch) * 1000);
    for (const t of TARGETS) {
      const top = `blockx-${VERSION}-${t}`;
      const listing = must(["tar", "--numeric-owner", "-tvzf", join(dir, "first", archive(t))]).trim().split("\n");
      const entries = listing.map((l) => {
        const [mode, owner, , date, time, name] = l.split(/\s+/);
        return { mode: mode!, owner: owner!, at: `${date} ${time}`, name: name!.replace(/\/$/, "") };
      });
      expect(entries.map((e) => e.name).sort()).toEqual(
        [top, `${top}/blockx`, `${top}/LICENSE`, `${top}/THIRD-PARTY-LICENSES.md`, `${top}/README-operations.md`, `${top}/systemd`, ...units.map((u) => `${top}/systemd/${u}`)].sort(),
      );
      for (const e of entries) {
        expect(e.owner).toBe("0/0");
        const mtime = run(["date", "-d", e.at, "+%s"]).stdout.trim();
        // tar prints local minutes: the member's time is the build date's minute.
        expect(Number(mtime)).toBe(Math.floor(buildDate.getTime() / 60_000) * 60);
        expect(e.mode).toBe(e.name === top || e.name.endsWith("/systemd") ? "drwxr-xr-x" : e.name.endsWith("/blockx") ? "-rwxr-xr-x" : "-rw-r--r--");
      }
      expect(readFileSync(join(dir, t, top, "LICENSE"), "utf8")).toBe(readFileSync(join(tree, "LICENSE"), "utf8"));
      expect(readFileSync(join(dir, t, top, "LICENSE"), "utf8")).toContain("Apache License\n                           Version 2.0, January 2004");
      expect(readFileSync(join(dir, t, top, "THIRD-PARTY-LICENSES.md"), "utf8")).toBe(readFileSync(join(tree, "THIRD-PARTY-LICENSES.md"), "utf8"));
      expect(readFileSync(join(dir, t, top, "README-operations.md"), "utf8")).toContain("## Release archives");
    }
  });

  // A user's first commands with each binary, from an empty folder: its version line, then one call
  // through a real executor pool (the embedded executor package extracted and started).
  for (const t of TARGETS) {
    test(`the ${t} binary from the archive prints its version and runs a call${t === "linux-arm64" ? " (under qemu-user-static)" : ""}`, () => {
      const binary = join(dir, t, `blockx-${VERSION}-${t}`, "blockx");
      const cmd = t === "linux-arm64" ? ["qemu-aarch64-static", "-L", ARM64_LIBC, binary] : [binary];
      const work = join(dir, `run-${t}`);
      mkdirSync(work);
      writeFileSync(join(work, "inc.py"), "def main(ctx, input):\n    return input + 1\n");
      const date = new Date(Number(epoch) * 1000).toISOString().replace(/\.\d+Z$/, "Z");
      expect(must([...cmd, "version"], { cwd: work }).trim()).toBe(`blockx ${VERSION} (commit ${commit}, built ${date}, ${t}, bun ${BUN_VERSION}, sources ${digest})`);
      // Under qemu-user the arm64 C library's prefix (-L) is a plain folder where the host has links
      // (/lib -> usr/lib): lstat sees the host's link, readlink the prefix's folder (EINVAL), so the
      // sandbox's view of the host cannot be judged under emulation; the x64 binary runs it as shipped.
      const out = must([...cmd, "exec", "inc.py", "41"], { cwd: work, env: t === "linux-arm64" ? { EXECUTOR_SANDBOX: "off" } : {} });
      expect(JSON.parse(out)).toMatchObject({ ok: true, value: 42 });
    }, 60_000);
  }

  test("a second make dist of the same commit gives byte-identical archives", () => {
    makeDist(join(dir, "second"));
    const differing: string[] = [];
    for (const name of ["SHA256SUMS", ...TARGETS.map(archive)]) {
      if (Bun.hash(readFileSync(join(dir, "first", name))) !== Bun.hash(readFileSync(join(dir, "second", name)))) differing.push(name);
    }
    if (differing.length > 0) {
      // Say which members differ, so a reader knows what stopped being reproducible.
      const members: string[] = [];
      for (const t of TARGETS.filter((t) => differing.includes(archive(t)))) {
        const again = join(dir, `second-${t}`);
        mkdirSync(again);
        must(["tar", "xzf", join(dir, "second", archive(t)), "-C", again]);
        const r = run(["diff", "-rq", join(dir, t), again]);
        members.push(r.stdout.trim() || `${archive(t)}: same members, different archive bytes (tar headers or gzip)`);
      }
      throw new Error(`not reproducible: ${differing.join(", ")} differ\n${members.join("\n")}`);
    }
    expect(differing).toEqual([]);
  }, 240_000);
});
