import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlockxProcess } from "../support/blockx-process";

// Secrets never printed (issue 51, item 5): a variable that can hold a secret (TABLE_STORE_URL's
// password, ETCD_PASSWORD, node keys in an inline CHAINS_CONFIG) is marked in its declaration, and
// the compiled binary prints its value in no configuration error, log line, `--help` or `blockx
// doctor` report. Each case runs the binary as an operator would and searches everything it wrote
// (stdout and stderr) for the secret, after checking that the output is about the variable at all.

const SECRET = "hunter2";
// No etcd answers here: a Worker gets as far as opening its table store and logs why it cannot.
const NO_ETCD = { BLOCKX_INSECURE: "1", ETCD_ENDPOINTS: "127.0.0.1:1", WORKER_LISTEN: "127.0.0.1:0" };

/** everything: what the process wrote, stdout's lines and stderr. */
const everything = (p: BlockxProcess) => p.lines.map((l) => JSON.stringify(l)).join("\n") + "\n" + p.stderr;

/** exitOutput runs a command that ends on its own and returns everything it wrote. */
async function exitOutput(args: string[], env: Record<string, string>): Promise<{ code: number; out: string }> {
  const p = BlockxProcess.spawn(args, env);
  const code = await p.exited;
  // The pumps finish a moment after exit: stop() waits for nothing more, so read after it.
  await Bun.sleep(0);
  const out = everything(p);
  await p.stop();
  return { code, out };
}

describe("a secret in the configuration is never printed", () => {
  test.each([
    // The case: a misspelt scheme.
    ["a URL whose scheme names no store", "postgress://blockx:hunter2@db/x", "TABLE_STORE_URL"],
    // The schema's own check fails (a space): the error quotes what was given.
    ["a URL the variable's rule refuses", "postgres://blockx:hunter2@db /x", "TABLE_STORE_URL: expected"],
    ["a password with a slash, which no URL parser reads", "postgres://blockx:hun/ter2x@db /x", "TABLE_STORE_URL: expected"],
  ])("`blockx worker` with %s: the configuration error names TABLE_STORE_URL, not the password", async (_what, url, expected) => {
    for (const how of ["env", "flag"] as const) {
      const r = how === "env" ? await exitOutput(["worker"], { ...NO_ETCD, TABLE_STORE_URL: url }) : await exitOutput(["worker", `--table-store-url=${url}`], NO_ETCD);
      expect(r.code).toBe(2);
      expect(r.out).toContain(expected);
      expect(r.out).not.toContain(SECRET);
      expect(r.out).not.toContain("ter2x");
    }
  });

  test("`blockx worker` whose Postgres does not answer: the log lines name the store without its password, in the userinfo or the query", async () => {
    for (const url of ["postgres://blockx:hunter2@127.0.0.1:1/x", "postgresql://blockx@127.0.0.1:1/x?sslmode=disable&password=hunter2"]) {
      const w = BlockxProcess.spawn(["worker"], { ...NO_ETCD, TABLE_STORE_URL: url });
      const line = await w.waitForLog((l) => l.msg.startsWith("table store unreachable"));
      expect(String(line.store)).toContain("127.0.0.1:1");
      await w.stop();
      expect(everything(w)).not.toContain(SECRET);
    }
  });

  test("a sqlite: URL with credentials in it (nonsense, but given): the error and the logs hide them", async () => {
    const w = BlockxProcess.spawn(["worker"], { ...NO_ETCD, TABLE_STORE_URL: "sqlite://blockx:hunter2@db/x" });
    const code = await w.exited;
    await Bun.sleep(0);
    const out = everything(w);
    await w.stop();
    expect(code).not.toBe(0);
    expect(out).toContain("TABLE_STORE_URL");
    expect(out).not.toContain(SECRET);
  });

  test("ETCD_PASSWORD: refused beside ETCD_PASSWORD_FILE, and the error says so without the password", async () => {
    const dir = mkdtempSync(join(tmpdir(), "blockx-secret-"));
    try {
      const file = join(dir, "pw");
      writeFileSync(file, "another-secret\n");
      const r = await exitOutput(["worker"], { ...NO_ETCD, ETCD_USERNAME: "w", ETCD_PASSWORD: SECRET, ETCD_PASSWORD_FILE: file });
      expect(r.code).toBe(2);
      expect(r.out).toContain("ETCD_PASSWORD");
      expect(r.out).not.toContain(SECRET);
      expect(r.out).not.toContain("another-secret");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("an inline CHAINS_CONFIG that is not JSON: the error gives the place, not the text (a node's key pasted without quotes)", async () => {
    // The JSON parser quotes the identifier it stopped at: here, the key.
    const r = await exitOutput(["worker"], { ...NO_ETCD, CHAINS_CONFIG: `{"chains": {"eth": {"source": "rpc", "endpoints": [${SECRET}]}}}` });
    expect(r.code).toBe(2);
    expect(r.out).toContain("CHAINS_CONFIG: not valid JSON");
    expect(r.out).not.toContain(SECRET);
  });

  test("`blockx worker --help` with the secrets set: the variables are listed as secrets, their values are not", async () => {
    const r = await exitOutput(["worker", "--help"], { ...NO_ETCD, TABLE_STORE_URL: "postgres://blockx:hunter2@db/x", ETCD_PASSWORD: SECRET });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/TABLE_STORE_URL[^\n]*\n[^\n]*a secret: never printed/);
    expect(r.out).toMatch(/ETCD_PASSWORD +default[^\n]*\n[^\n]*a secret: never printed/);
    expect(r.out).not.toContain(SECRET);
  });

  test("`blockx doctor`, from the environment and from an --env-file: the report names the variable, not the password", async () => {
    const bad = { TABLE_STORE_URL: "postgres://blockx:hunter2@db /x", ETCD_USERNAME: "w", ETCD_PASSWORD: SECRET };
    const fromEnv = await exitOutput(["doctor", "worker"], { ...NO_ETCD, ...bad });
    expect(fromEnv.code).toBe(1);
    expect(fromEnv.out).toContain("TABLE_STORE_URL: expected");
    expect(fromEnv.out).not.toContain(SECRET);
    const dir = mkdtempSync(join(tmpdir(), "blockx-secret-"));
    try {
      const file = join(dir, "worker.env");
      writeFileSync(file, Object.entries({ ...NO_ETCD, ...bad }).map(([k, v]) => `${k}='${v}'`).join("\n") + "\n");
      const fromFile = await exitOutput(["doctor", "worker", "--json", "--env-file", file], {});
      expect(fromFile.code).toBe(1);
      expect(fromFile.out).toContain("TABLE_STORE_URL: expected");
      expect(fromFile.out).not.toContain(SECRET);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("`blockx table` against a Postgres that does not answer: the error names the store, not its password", async () => {
    const r = await exitOutput(["table", "t"], { TABLE_STORE_URL: "postgres://blockx:hunter2@127.0.0.1:1/x", TABLE_STORE_CONNECT_TIMEOUT_MS: "1000" });
    expect(r.code).not.toBe(0);
    expect(r.out).toContain("127.0.0.1:1");
    expect(r.out).not.toContain(SECRET);
  });
});
