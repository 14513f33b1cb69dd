import { join } from "node:path";
import { findPostgresBinDir, PrivatePostgres } from "../../src/dev/adapters/private-postgres";
import { freePort } from "./ports";

const REPO = join(import.meta.dir, "..", "..");

/** startPostgres: a private Postgres for a test run (preload.ts) or one test that stops it. */
export async function startPostgres(): Promise<PrivatePostgres> {
  const binDir = findPostgresBinDir(process.env, REPO);
  if (!binDir) throw new Error("no Postgres binaries (run `make deps`; or set BLOCKX_POSTGRES_BINDIR)");
  return PrivatePostgres.start({ binDir, port: await freePort() });
}

let counter = 0;

/**
 * freshDatabase: a new, empty database on the run's shared Postgres (started by preload.ts), as a
 * TABLE_STORE_URL. Every test that writes gets its own, so tests never see each other's tables.
 */
export async function freshDatabase(): Promise<string> {
  const admin = process.env.BLOCKX_TEST_POSTGRES_URL;
  if (!admin) throw new Error("BLOCKX_TEST_POSTGRES_URL is not set (test/support/preload.ts starts Postgres)");
  const name = `t_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  const { SQL } = await import("bun");
  const sql = new SQL(admin, { max: 1 });
  try {
    await sql.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await sql.close({ timeout: 0 });
  }
  const u = new URL(admin);
  u.pathname = `/${name}`;
  return u.toString();
}
