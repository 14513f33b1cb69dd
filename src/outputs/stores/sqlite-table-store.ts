import { threadEntry } from "../../common/threads/thread-entry";
import { parseExactJson } from "../../common/json/exact-json";
import { type GroupCommitResult, GroupCommitQueue } from "./group-commit-queue";
import { SqliteTables } from "./sqlite-tables";
import { type CellValue, type CommitCounts, type ReadOptions, type ReplaceOutcome, type TableStore, TableStoreError, type TableWrite, type WrittenScope } from "./table-store";
import type { SqliteThreadMethod, SqliteThreadReply, SqliteThreadRequest } from "./sqlite-thread-protocol";
import type { StoreKind } from "./store-kinds";
import type { CallFence, RunClaim, RunClaimRequest, RunFence, RunState } from "./run-fence";

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** SQLite result codes that mean "not now" (locked, busy, out of disk, unreadable): retryable. */
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|PROTOCOL|NOMEM)/;

/** storeErrorOf maps what bun:sqlite throws to a TableStoreError with a code. */
export function sqliteStoreError(e: unknown, description: string): TableStoreError {
  if (e instanceof TableStoreError) return e;
  const code = String((e as { code?: unknown }).code ?? "");
  const message = (e as Error).message ?? String(e);
  if (UNAVAILABLE.test(code) || /database is locked/.test(message)) return new TableStoreError("STORE_UNAVAILABLE", `table store ${description} unavailable: ${message}`);
  return new TableStoreError("INTERNAL", `table store ${description}: ${message}`);
}

/**
 * SqliteTableStore: the embedded table store for one host (TABLE_STORE_PATH). Its SQLite calls
 * run on a thread of their own (a Bun Worker holding a SqliteTables), so a write waiting on another
 * process's lock (up to the busy timeout) or an fsync never stalls the Worker's event loop:
 * heartbeats, executor pings and gRPC go on. `inline` runs them on the calling thread instead
 * (`blockx table`, tests of the engine). Values cross the thread as JSON text, parsed exactly.
 */
/**
 * sqliteStore: the embedded file of one host. TABLE_STORE_URL=sqlite:///abs/path.sqlite (or
 * sqlite:relative/path.sqlite) names it; an empty TABLE_STORE_URL is the file TABLE_STORE_PATH.
 */
export const sqliteStore: StoreKind = {
  schemes: ["sqlite:"],
  shared: false,
  describe: (url) => url,
  open: (url, c, o) => new SqliteTableStore(url === "" ? c.tableStorePath.trim() : sqlitePathOf(url), { inline: o.inline ?? false, busyTimeoutMs: c.tableStoreStatementTimeoutMs }),
};

/** sqlitePathOf: the file of a sqlite: URL (`sqlite:///srv/t.sqlite` is /srv/t.sqlite, `sqlite:t.sqlite` relative). */
export function sqlitePathOf(url: string): string {
  const rest = url.trim().slice("sqlite:".length);
  return rest.startsWith("//") ? decodeURIComponent(rest.slice(2)) : decodeURIComponent(rest);
}

export class SqliteTableStore implements TableStore {
  readonly description: string;
  private readonly thread: Worker | undefined;
  private readonly inline: SqliteTables | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (text: string) => void; reject: (e: Error) => void }>();
  private closed = false;
  private broken: TableStoreError | undefined;
  /** Sizes in JSON characters of the calls' writes. */
  private readonly groups = new GroupCommitQueue<string>((texts) => this.sendGroup(texts), { maxCalls: 512, maxSize: 32 << 20 });

  constructor(path: string, options: { readonly inline?: boolean; readonly busyTimeoutMs?: number; readonly nowMs?: () => number } = {}) {
    this.description = `sqlite:${path}`;
    if (options.inline) {
      try {
        this.inline = new SqliteTables(path, options.busyTimeoutMs, options.nowMs);
      } catch (e) {
        throw sqliteStoreError(e, this.description);
      }
      return;
    }
    this.thread = new Worker(threadEntry(import.meta.url, "outputs/stores/sqlite-thread", new URL("./sqlite-thread.ts", import.meta.url)));
    this.thread.onmessage = (ev: MessageEvent<SqliteThreadReply>) => {
      const w = this.waiting.get(ev.data.id);
      if (!w) return;
      this.waiting.delete(ev.data.id);
      if (ev.data.ok) w.resolve(ev.data.text);
      else w.reject(new TableStoreError(ev.data.code, ev.data.message));
    };
    this.thread.onerror = (ev) => {
      // A thread that failed answers nothing more: every request from now on fails at once.
      this.broken = new TableStoreError("STORE_UNAVAILABLE", `table store ${this.description}: its thread failed: ${ev.message}`);
      this.failAll(this.broken);
    };
    this.post({ id: 0, op: "open", path, busyTimeoutMs: options.busyTimeoutMs ?? 10_000 });
  }

  /**
   * commit: on the thread, commits arriving while another is being written wait and then go
   * together, as one group (GroupCommitQueue; SqliteTables.commitGroup: one transaction, one fsync,
   * each call in a savepoint of its own). synchronous=FULL costs an fsync per transaction: half of
   * the Worker's CPU per call in a backfill of small rows when each call had its own.
   */
  async commit(writes: readonly TableWrite[], fence: CallFence | null = null): Promise<ReplaceOutcome[]> {
    if (this.inline) return this.run(() => this.inline!.commit(writes, fence));
    if (this.broken) throw this.broken;
    if (this.closed) throw new TableStoreError("STORE_UNAVAILABLE", `table store ${this.description} is closed`);
    const text = JSON.stringify({ writes, fence, issuedMs: Date.now() });
    return this.groups.commit(text, text.length);
  }

  openEpoch(epoch: string, workerAddr: string, ttlMs: number): Promise<void> {
    return this.call("openEpoch", [epoch, workerAddr, ttlMs]);
  }

  renewEpoch(epoch: string, ttlMs: number): Promise<boolean> {
    return this.call("renewEpoch", this.inline ? [epoch, ttlMs] : [epoch, ttlMs, Date.now()]);
  }

  claimRun(req: RunClaimRequest): Promise<RunClaim> {
    return this.call("claimRun", [req]);
  }

  endRun(fence: RunFence, state: Exclude<RunState, "RUNNING">): Promise<void> {
    return this.call("endRun", [fence, state]);
  }

  wideScopes(table: string, chain: string, fromBlock: number, toBlock: number, limit: number): Promise<WrittenScope[]> {
    return this.call("wideScopes", [table, chain, fromBlock, toBlock, limit]);
  }

  check(): Promise<void> {
    return this.call("check", []);
  }

  /** call runs one of SqliteTables' other methods, inline or on the thread (arguments and answer as JSON). */
  private async call<T>(method: SqliteThreadMethod, args: unknown[]): Promise<T> {
    if (this.inline) return this.run(() => (this.inline![method] as (...a: unknown[]) => T).apply(this.inline, args));
    return JSON.parse(await this.request({ op: "call", method, args })) as T;
  }

  /** sendGroup writes one group on the thread: a group of one as a plain commit. */
  private async sendGroup(texts: readonly string[]): Promise<GroupCommitResult[]> {
    if (texts.length === 1) return [{ ok: true, outcomes: JSON.parse(await this.request({ op: "commit", writes: texts[0]! })) as ReplaceOutcome[] }];
    return JSON.parse(await this.request({ op: "commitGroup", groups: texts })) as GroupCommitResult[];
  }

  commitCounts(): CommitCounts {
    return { ...this.groups.sent };
  }

  async read(table: string, options: ReadOptions = {}): Promise<Record<string, CellValue>[]> {
    if (this.inline) return this.run(() => this.inline!.read(table, options));
    return parseExactJson(await this.request({ op: "read", table, options })) as Record<string, CellValue>[];
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.inline) return this.inline.close();
    await this.request({ op: "close" }).catch(() => {});
    this.thread!.terminate();
    this.failAll(new TableStoreError("STORE_UNAVAILABLE", `table store ${this.description} is closed`));
  }

  private run<T>(f: () => T): T {
    try {
      return f();
    } catch (e) {
      throw sqliteStoreError(e, this.description);
    }
  }

  private request(r: DistributiveOmit<SqliteThreadRequest, "id">): Promise<string> {
    if (this.broken) return Promise.reject(this.broken);
    if (this.closed && r.op !== "close") return Promise.reject(new TableStoreError("STORE_UNAVAILABLE", `table store ${this.description} is closed`));
    const id = this.nextId++;
    return new Promise<string>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.post({ ...r, id } as SqliteThreadRequest);
    });
  }

  private post(r: SqliteThreadRequest): void {
    this.thread!.postMessage(r);
  }

  private failAll(e: TableStoreError): void {
    this.groups.failAll(e);
    for (const w of this.waiting.values()) w.reject(e);
    this.waiting.clear();
  }
}
