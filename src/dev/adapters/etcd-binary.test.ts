import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DevError } from "../core/dev-error";
import { ETCD_CACHE_PATH, locateEtcd } from "./etcd-binary";

const root = mkdtempSync(join(tmpdir(), "blockx-etcd-locate-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function fakeEtcd(path: string): string {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, "#!/bin/sh\n");
  chmodSync(path, 0o755);
  return path;
}

describe("locateEtcd", () => {
  const checkout = join(root, "checkout");
  const cached = fakeEtcd(join(checkout, ETCD_CACHE_PATH));
  const onPath = fakeEtcd(join(root, "bin", "etcd"));
  const empty = join(root, "empty");
  mkdirSync(empty);

  test("ETCD_BIN wins; the cache next to the binary's checkout comes before PATH; then the current directory's cache; then PATH", () => {
    expect(locateEtcd(onPath, { execPath: join(checkout, "dist", "blockx"), cwd: empty, path: "" })).toBe(onPath);
    expect(locateEtcd("", { execPath: join(checkout, "dist", "blockx"), cwd: empty, path: join(root, "bin") })).toBe(cached);
    expect(locateEtcd("", { execPath: "/usr/local/bin/blockx", cwd: checkout, path: join(root, "bin") })).toBe(cached);
    expect(locateEtcd("", { execPath: "/usr/local/bin/blockx", cwd: empty, path: `/nonexistent:${join(root, "bin")}` })).toBe(onPath);
  });

  test("none of the three: a DevError naming each place and how to get etcd", () => {
    let err: unknown;
    try {
      locateEtcd("", { execPath: "/usr/local/bin/blockx", cwd: empty, path: "/nonexistent" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DevError);
    const msg = (err as DevError).message;
    expect((err as DevError).code).toBe("ETCD_NOT_FOUND");
    expect(msg).toContain("1. ETCD_BIN (not set)");
    expect(msg).toContain(`2. the Makefile's cache: /usr/local/${ETCD_CACHE_PATH} and ${join(empty, ETCD_CACHE_PATH)}`);
    expect(msg).toContain("3. etcd on PATH");
    expect(msg).toContain("make deps");
  });

  test("ETCD_BIN naming a file that is not executable is an error, not a fallback", () => {
    const plain = join(root, "plain");
    writeFileSync(plain, "");
    expect(() => locateEtcd(plain, { execPath: join(checkout, "dist", "blockx"), cwd: checkout, path: "" })).toThrow(`ETCD_BIN=${plain} is not an executable file`);
  });
});
