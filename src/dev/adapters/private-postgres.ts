import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

/** The client authentication every connection gets: a password (SCRAM), over TCP and the Unix socket alike. */
const PG_HBA = ["# Written by blockx: every connection needs user blockx's password (SCRAM).", "local all all scram-sha-256", "host all all 127.0.0.1/32 scram-sha-256", "host all all ::1/128 scram-sha-256", ""].join("\n");

/**
 * PrivatePostgres is a throwaway Postgres server: initdb into a fresh folder, listening on
 * 127.0.0.1:port (and a Unix socket in its own folder), tied to this process by `setpriv
 * --pdeathsig KILL` so it dies with it. Only whoever holds its password gets in: user `blockx`
 * (a superuser, who could run programs as the server's account with `COPY ... TO PROGRAM`) has a
 * random password, set in single-user mode before the server ever listens, and every connection
 * (TCP and the socket) must prove it with scram-sha-256. Trust authentication on a loopback port,
 * as before, let every local account in. The password is kept in `DIR/password` (0600, this
 * process's user), so a kept folder starts again with it. Postgres refuses to run as
 * root: as root, the folder is given to `nobody` and both initdb and postgres run as `nobody`.
 * Used by the tests (one per run, from the preload) and by `blockx dev --postgres`.
 */
export class PrivatePostgres {
  private proc: ReturnType<typeof Bun.spawn> | undefined;
  private stderr = "";
  private secret = "";

  private constructor(
    readonly binDir: string,
    readonly dir: string,
    readonly port: number,
    private readonly ownsDir: boolean,
  ) {}

  /** password: user blockx's password (random at initdb). */
  get password(): string {
    return this.secret;
  }

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

  /** url: the superuser's URL to database `db` (default `postgres`), with its password. */
  url(db = "postgres"): string {
    return `postgres://blockx:${encodeURIComponent(this.secret)}@127.0.0.1:${this.port}/${db}`;
  }

  private get passwordFile(): string {
    return join(this.dir, "password");
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
    if (existsSync(join(this.dataDir, "PG_VERSION"))) {
      // A kept folder: start it again, with the password it was given.
      try {
        this.secret = readFileSync(this.passwordFile, "utf8").trim();
      } catch (e) {
        throw new Error(`a kept Postgres folder without its password file ${this.passwordFile}: ${(e as Error).message} (remove ${this.dir} to start afresh)`);
      }
      return;
    }
    // Trust only while nothing listens (initdb and single-user mode); pg_hba.conf demands the password before the server starts.
    const init = Bun.spawn(this.asOwner([join(this.binDir, "initdb"), "-D", this.dataDir, "-U", "blockx", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"]), { stdout: "pipe", stderr: "pipe" });
    const [code, err] = await Promise.all([init.exited, new Response(init.stderr).text()]);
    if (code !== 0) throw new Error(`initdb failed (${code}): ${err.trim().slice(-800)}`);
    this.secret = randomBytes(24).toString("base64url");
    writeFileSync(this.passwordFile, this.secret + "\n", { mode: 0o600 });
    // Single-user mode reads the statement on stdin (an inherited pipe: no file for other accounts to read); SCRAM is PG 14+'s default encryption.
    const single = Bun.spawn(this.asOwner([join(this.binDir, "postgres"), "--single", "-D", this.dataDir, "-c", "password_encryption=scram-sha-256", "postgres"]), {
      stdin: new TextEncoder().encode(`ALTER ROLE blockx PASSWORD '${this.secret}'\n`),
      stdout: "pipe",
      stderr: "pipe",
    });
    const [singleCode, singleOut, singleErr] = await Promise.all([single.exited, new Response(single.stdout).text(), new Response(single.stderr).text()]);
    if (singleCode !== 0 || /ERROR/.test(singleOut + singleErr)) throw new Error(`setting the password failed (${singleCode}): ${(singleOut + singleErr).trim().slice(-800)}`);
    const hba = join(this.dataDir, "pg_hba.conf");
    writeFileSync(hba, PG_HBA, { mode: 0o600 });
    if (process.getuid?.() === 0) chownSync(hba, NOBODY, NOBODY);
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
