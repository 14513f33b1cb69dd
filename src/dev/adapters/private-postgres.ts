import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Where Debian's Postgres binaries are looked for, in order (BLOCKX_POSTGRES_BINDIR first). */
export function postgresBinDirs(env: Readonly<Record<string, string | undefined>> = process.env, repo?: string): string[] {
  const dirs = [env.BLOCKX_POSTGRES_BINDIR ?? ""];
  for (const v of ["17", "16", "15"]) dirs.push(`/usr/lib/postgresql/${v}/bin`);
  if (repo) dirs.push(join(repo, ".cache/postgres/root/usr/lib/postgresql/15/bin"));
  return dirs.filter((d) => d !== "");
}

export function findPostgresBinDir(env: Readonly<Record<string, string | undefined>> = process.env, repo?: string): string | undefined {
  return postgresBinDirs(env, repo).find((d) => existsSync(join(d, "postgres")) && existsSync(join(d, "initdb")));
}

const NOBODY = 65534;

/**
 * PrivatePostgres is a throwaway Postgres server: initdb into a fresh folder, listening on
 * 127.0.0.1:port (and a Unix socket in its own folder), trust authentication for user `blockx`,
 * tied to this process by `setpriv --pdeathsig KILL` so it dies with it. Postgres refuses to run as
 * root: as root, the folder is given to `nobody` and both initdb and postgres run as `nobody`.
 * Used by the tests (one per run, from the preload) and by `blockx dev --postgres`.
 */
export class PrivatePostgres {
  private proc: ReturnType<typeof Bun.spawn> | undefined;
  private stderr = "";

  private constructor(
    readonly binDir: string,
    readonly dir: string,
    readonly port: number,
    private readonly ownsDir: boolean,
  ) {}

  /** start: a fresh server in `dir` (default: a new temp folder, removed by destroy). */
  static async start(o: { binDir: string; port: number; dir?: string; log?: (line: string) => void }): Promise<PrivatePostgres> {
    const dir = o.dir ?? mkdtempSync(join(tmpdir(), "blockx-pg-"));
    const pg = new PrivatePostgres(o.binDir, dir, o.port, o.dir === undefined);
    await pg.init();
    await pg.run();
    return pg;
  }

  get dataDir(): string {
    return join(this.dir, "data");
  }

  /** url: the superuser's URL to database `db` (default `postgres`). */
  url(db = "postgres"): string {
    return `postgres://blockx@127.0.0.1:${this.port}/${db}`;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  private asOwner(argv: string[]): string[] {
    const root = process.getuid?.() === 0;
    return ["setpriv", "--pdeathsig", "KILL", ...(root ? [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups"] : []), "--", ...argv];
  }

  private async init(): Promise<void> {
    mkdirSync(this.dataDir, { recursive: true, mode: 0o700 });
    if (process.getuid?.() === 0) {
      chmodSync(this.dir, 0o755);
      chownSync(this.dir, NOBODY, NOBODY);
      chownSync(this.dataDir, NOBODY, NOBODY);
    }
    if (existsSync(join(this.dataDir, "PG_VERSION"))) return; // a kept folder: start it again
    const p = Bun.spawn(this.asOwner([join(this.binDir, "initdb"), "-D", this.dataDir, "-U", "blockx", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"]), { stdout: "pipe", stderr: "pipe" });
    const [code, err] = await Promise.all([p.exited, new Response(p.stderr).text()]);
    if (code !== 0) throw new Error(`initdb failed (${code}): ${err.trim().slice(-800)}`);
  }

  /** run starts (or restarts after stop) the server and waits until it accepts connections. */
  async run(): Promise<void> {
    if (this.proc) return;
    const argv = [join(this.binDir, "postgres"), "-D", this.dataDir, "-p", String(this.port), "-k", this.dataDir, "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300", "-c", "shared_buffers=32MB"];
    this.stderr = "";
    const proc = Bun.spawn(this.asOwner(argv), { stdout: "ignore", stderr: "pipe" });
    this.proc = proc;
    void (async () => {
      const dec = new TextDecoder();
      for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) this.stderr = (this.stderr + dec.decode(chunk)).slice(-4000);
    })();
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (proc.exitCode !== null) throw new Error(`postgres exited with ${proc.exitCode}: ${this.stderr.trim().slice(-800)}`);
      if (await this.accepts()) return;
      await Bun.sleep(50);
    }
    throw new Error(`postgres did not accept connections within 30 s: ${this.stderr.trim().slice(-800)}`);
  }

  private async accepts(): Promise<boolean> {
    const { SQL } = await import("bun");
    const sql = new SQL(this.url(), { max: 1, connectionTimeout: 2 });
    try {
      await sql.unsafe("SELECT 1");
      return true;
    } catch {
      return false;
    } finally {
      await sql.close({ timeout: 0 }).catch(() => {});
    }
  }

  /** createDatabase makes a fresh database and returns its URL. */
  async createDatabase(name: string): Promise<string> {
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a database name: ${name}`);
    const { SQL } = await import("bun");
    const sql = new SQL(this.url(), { max: 1 });
    try {
      await sql.unsafe(`CREATE DATABASE ${name}`);
    } finally {
      await sql.close({ timeout: 0 });
    }
    return this.url(name);
  }

  /**
   * stop ends the server; the data stays. SIGQUIT (the default) is Postgres's immediate shutdown:
   * every backend ends at once, nothing is flushed, the next start recovers from the WAL, as after a
   * crash; SIGINT is a fast clean shutdown; SIGKILL leaves backends to notice on their own.
   */
  async stop(signal: "SIGKILL" | "SIGINT" | "SIGQUIT" = "SIGQUIT"): Promise<void> {
    const p = this.proc;
    if (!p) return;
    this.proc = undefined;
    p.kill(signal);
    await p.exited;
    if (signal === "SIGKILL") {
      // The children of a killed postmaster hold the shared memory until they notice; a restart waits for them.
      rmSync(join(this.dataDir, "postmaster.pid"), { force: true });
      await Bun.sleep(200);
    }
  }

  async destroy(): Promise<void> {
    await this.stop("SIGINT");
    if (this.ownsDir) rmSync(this.dir, { recursive: true, force: true });
  }
}
