/**
 * `blockx dev --postgres`'s server (PrivatePostgres, also the test run's) is reachable only with
 * its password (issue 51, item 2): before, it trusted every connection to its loopback port, so any
 * local account was a Postgres superuser (and could run programs as the server's account with
 * `COPY ... TO PROGRAM`). Tried with Debian's psql, a client other than the one we ship: without
 * the password, over TCP and over its Unix socket, as this user and as another local account
 * (`nobody`), and with a wrong password, every connection is refused; with the URL's password it
 * gets in. The password file is 0600; a kept folder starts again with the same password.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { findPostgresBinDir, PrivatePostgres } from "../../src/dev/adapters/private-postgres";
import { freePort } from "../support/ports";

const REPO = join(import.meta.dir, "..", "..");
const binDir = findPostgresBinDir(process.env, REPO)!;
const PSQL = existsSync(join(binDir, "psql")) ? join(binDir, "psql") : "/usr/bin/psql";
let pg: PrivatePostgres;

beforeAll(async () => {
  pg = await PrivatePostgres.start({ binDir, port: await freePort() });
}, 60_000);

afterAll(async () => {
  await pg?.destroy();
});

/** psql runs `SELECT 1` against the server; `password` in PGPASSWORD, or none (-w: never prompt). */
function psql(o: { host: string; password?: string; asNobody?: boolean }): { ok: boolean; out: string } {
  const argv = [PSQL, "-h", o.host, "-p", String(pg.port), "-U", "blockx", "-d", "postgres", "-w", "-tA", "-c", "SELECT 1"];
  const r = Bun.spawnSync(o.asNobody ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", ...argv] : argv, {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...(o.password !== undefined ? { PGPASSWORD: o.password } : {}) },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { ok: r.exitCode === 0 && r.stdout.toString().trim() === "1", out: (r.stdout.toString() + r.stderr.toString()).trim() };
}

describe("the private Postgres lets in only whoever holds its password", () => {
  test("the URL carries a random password, and its file is 0600", () => {
    expect(pg.password).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(pg.url()).toBe(`postgres://blockx:${pg.password}@127.0.0.1:${pg.port}/postgres`);
    expect(statSync(join(pg.dir, "password")).mode & 0o777).toBe(0o600);
  });

  test("with the password: in, over TCP and the Unix socket", () => {
    expect(psql({ host: "127.0.0.1", password: pg.password })).toMatchObject({ ok: true });
    expect(psql({ host: pg.dataDir, password: pg.password })).toMatchObject({ ok: true });
  });

  test.each([
    ["TCP, this user, no password", { host: "127.0.0.1" }],
    ["TCP, another local account (nobody), no password", { host: "127.0.0.1", asNobody: true }],
    ["TCP, a wrong password", { host: "127.0.0.1", password: "hunter2" }],
    ["the Unix socket, no password", { host: "socket" }],
  ] as const)("refused: %s", (_what, o) => {
    const r = psql({ ...o, host: o.host === "socket" ? pg.dataDir : o.host });
    expect(r.ok).toBe(false);
    expect(r.out).toMatch(/password authentication failed|no password supplied|fe_sendauth/);
  });

  test("Bun's client with the URL gets in; without the password it is refused", async () => {
    const { SQL } = await import("bun");
    const good = new SQL(pg.url(), { max: 1 });
    expect(await good.unsafe("SELECT 1 AS one")).toEqual([{ one: 1 }]);
    await good.close({ timeout: 0 });
    const bare = new SQL(`postgres://blockx@127.0.0.1:${pg.port}/postgres`, { max: 1, connectionTimeout: 5 });
    const refused = await bare.unsafe("SELECT 1").then(
      () => "connected",
      (e: Error) => e.message,
    );
    await bare.close({ timeout: 0 }).catch(() => {});
    expect(refused).not.toBe("connected");
  });

  test("a kept folder starts again with the same password", async () => {
    const before = pg.password;
    const again = await (async () => {
      await pg.stop("SIGINT");
      const p = await PrivatePostgres.start({ binDir, port: pg.port, dir: pg.dir });
      return p;
    })();
    try {
      expect(again.password).toBe(before);
      expect(psql({ host: "127.0.0.1", password: before })).toMatchObject({ ok: true });
      expect(psql({ host: "127.0.0.1" }).ok).toBe(false);
    } finally {
      await again.stop("SIGINT");
      await pg.run();
    }
  }, 60_000);
});
