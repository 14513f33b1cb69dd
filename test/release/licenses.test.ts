/**
 * BlockX's own code is Apache-2.0 (LICENSE at the root, package.json, blockx-py's metadata: the
 * last in client-py/tests/test_package.py), and THIRD-PARTY-LICENSES.md lists every npm package the
 * binary bundles, as scripts/third-party-licenses.ts finds them in the bundle's source map: a new
 * or upgraded dependency fails here until the file is regenerated.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const REPO = join(import.meta.dir, "..", "..");

describe("licences", () => {
  test("LICENSE is the Apache License 2.0 and package.json says so", () => {
    const text = readFileSync(join(REPO, "LICENSE"), "utf8");
    expect(text.startsWith("                                 Apache License\n                           Version 2.0, January 2004\n")).toBe(true);
    expect(text).toContain("END OF TERMS AND CONDITIONS");
    expect((JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { license?: string }).license).toBe("Apache-2.0");
  });

  test("THIRD-PARTY-LICENSES.md lists exactly the packages the binary bundles, with their licence texts", () => {
    const p = Bun.spawnSync([process.execPath, join(REPO, "scripts", "third-party-licenses.ts"), "--check"], { cwd: REPO, stdout: "pipe", stderr: "pipe" });
    if (p.exitCode !== 0) throw new Error(p.stderr.toString());
    expect(p.stdout.toString()).toContain("matches the bundle");
    // The packages the runtime code imports directly are among them.
    const listed = readFileSync(join(REPO, "THIRD-PARTY-LICENSES.md"), "utf8");
    for (const dep of ["@grpc/grpc-js", "@bufbuild/protobuf", "etcd3", "pino", "zod", "viem", "cockatiel", "@noble/hashes"]) expect(listed).toContain(`\n| ${dep}`);
  }, 60_000);
});
