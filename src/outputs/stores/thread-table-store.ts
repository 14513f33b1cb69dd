import { parseExactJson } from "../../common/json/exact-json";
import { type GroupBounds, type GroupCommitResult, GroupCommitQueue } from "./group-commit-queue";
import type { CallFence, RunClaim, RunClaimRequest, RunFence, RunState } from "./run-fence";
import { type CellValue, type CommitCounts, type ReadOptions, type ReplaceOutcome, type TableStore, TableStoreError, type TableWrite, type WrittenScope, type ScopeCount } from "./table-store";
import type { TableEngine, TableThreadMethod, TableThreadReply, TableThreadRequest } from "./table-thread-protocol";

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** Where a ThreadTableStore's engine runs: on the calling thread, or on a thread of its own. */
export type EnginePlace =
  | { readonly inline: () => TableEngine }
  /** `entry`: the thread's module (threadEntry); `args`: what its opener takes. */
  | { readonly thread: string; readonly args: unknown };

/**
 * ThreadTableStore: a TableStore whose engine (SqliteTables, ParquetTables: synchronous calls,
 * file IO and fsyncs) runs on a thread of its own (a Bun Worker), so a write waiting on another
 * process's lock or an fsync never stalls the Worker's event loop: heartbeats, executor pings and
 * gRPC go on. Inline (`blockx table`, tests of the engine) it runs on the calling thread instead.
 * Values cross the thread as JSON text, parsed exactly. Commits arriving while another is being
 * written wait and then go together, as one group (GroupCommitQueue; the engine's commitGroup).
 */
export class ThreadTableStore implements TableStore {
  private readonly thread: Worker | undefined;
  private readonly inline: TableEngine | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (text: string) => void; reject: (e: Error) => void }>();
  private closed = false;
  private broken: TableStoreError | undefined;
  /** Sizes in JSON characters of the calls' writes. */
  private readonly groups: GroupCommitQueue<string>;

  constructor(
    readonly description: string,
    place: EnginePlace,
    private readonly classify: (e: unknown, description: string) => TableStoreError,
    bounds: GroupBounds = { maxCalls: 512, maxSize: 32 << 20 },
  ) {
    this.groups = new GroupCommitQueue<string>((texts) => this.sendGroup(texts), bounds);
    if ("inline" in place) {
      try {
        this.inline = place.inline();
      } catch (e) {
        throw classify(e, description);
      }
      return;
    }
    this.thread = new Worker(place.thread);
    this.thread.onmessage = (ev: MessageEvent<TableThreadReply>) => {
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
    this.post({ id: 0, op: "open", args: place.args });
  }

  /**
   * commit: on the thread, commits arriving while another is being written wait and then go
   * together, as one group (one transaction, one fsync, each call on its own).
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

  scopeCounts(table: string, chain: string, fromBlock: number, toBlock: number): Promise<ScopeCount[]> {
    return this.call("scopeCounts", [table, chain, fromBlock, toBlock]);
  }

  scopeBounds(table: string, chain: string): Promise<{ fromBlock: number; toBlock: number } | null> {
    return this.call("scopeBounds", [table, chain]);
  }

  check(): Promise<void> {
    return this.call("check", []);
  }

  /** call runs one of the engine's other methods, inline or on the thread (arguments and answer as JSON). */
  private async call<T>(method: TableThreadMethod, args: unknown[]): Promise<T> {
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

  private async run<T>(f: () => T | Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      throw this.classify(e, this.description);
    }
  }

  private request(r: DistributiveOmit<TableThreadRequest, "id">): Promise<string> {
    if (this.broken) return Promise.reject(this.broken);
    if (this.closed && r.op !== "close") return Promise.reject(new TableStoreError("STORE_UNAVAILABLE", `table store ${this.description} is closed`));
    const id = this.nextId++;
    return new Promise<string>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.post({ ...r, id } as TableThreadRequest);
    });
  }

  private post(r: TableThreadRequest): void {
    this.thread!.postMessage(r);
  }

  private failAll(e: TableStoreError): void {
    this.groups.failAll(e);
    for (const w of this.waiting.values()) w.reject(e);
    this.waiting.clear();
  }
}
