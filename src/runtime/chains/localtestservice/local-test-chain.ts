import { threadEntry } from "../../../common/threads/thread-entry";
import { RawJson } from "../../json/raw-json";
import { BackendError } from "../../backend-error";
import type { EthLogFilter } from "./eth-types";
import { DEFAULT_HEAD, MAX_LOG_BLOCK_RANGE } from "./synthetic-chain";
import type { SyntheticRequest } from "./synthetic-chain-jobs";
import type { SyntheticThreadMessage, SyntheticThreadReply } from "./synthetic-chain-thread-protocol";

/**
 * DEFAULT_MAX_LOG_BLOCKS: blocks one eth_getLogs of the local test chain may span
 * (LOCALTESTSERVICE_MAX_LOG_BLOCKS). Measured on this 2-core VM: 100 blocks take the generator
 * 0.4-0.7 s and answer about 7,600 logs, 4.7 MB of JSON; 1,000 blocks 4 s and 47 MB, near the
 * 64 MiB executor frame.
 */
export const DEFAULT_MAX_LOG_BLOCKS = 100;

/** The most LOCALTESTSERVICE_MAX_LOG_BLOCKS may be: the synthetic chain's own limit. */
export const MAX_LOG_BLOCKS_LIMIT = MAX_LOG_BLOCK_RANGE;

/** LocalTestChainSettings: whether a process serves the synthetic chain, and its bounds. */
export interface LocalTestChainSettings {
  /** On (LOCALTESTSERVICE_ENABLED=true, or CHAINS_CONFIG names a localtestservice chain): the backend and routed chains serve it. */
  readonly enabled: boolean;
  /** LOCALTESTSERVICE_HEAD. */
  readonly head: number;
  /** LOCALTESTSERVICE_MAX_LOG_BLOCKS. */
  readonly maxLogBlocks: number;
}

/** LOCAL_TEST_CHAIN_OFF says what a user reaching the synthetic chain where it is off can do about it. */
export const LOCAL_TEST_CHAIN_OFF =
  "the synthetic local test chain is off in this process (production roles serve it only when configured: " +
  'LOCALTESTSERVICE_ENABLED=true, or a chain with "source": "localtestservice" in CHAINS_CONFIG; blockx dev and blockx exec turn it on)';

/**
 * LocalTestChain serves the synthetic chain to a process (the localtestservice backend and every
 * chain the router gives the local test chain, one instance for both) and keeps its generation
 * off the process's main thread: blocks, receipts and logs are generated on a thread of their own
 * (synthetic-chain-thread.ts), started at the first request, and come back as JSON bytes the IO
 * subsystem passes to executors as they are. A request takes turns there with the others, one
 * block at a time, so a long log range delays a one-block request by a step, not by the range.
 * An eth_getLogs range longer than `maxLogBlocks` is refused before any work, with an
 * InvalidParams naming the bound and its variable.
 */
export class LocalTestChain {
  readonly head: number;
  readonly maxLogBlocks: number;
  private thread: Worker | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (bytes: Uint8Array) => void; reject: (e: Error) => void }>();
  /** Requests answered by the thread, for tests and the Worker's logs. */
  readonly stats = { requests: 0, threadStarts: 0 };

  constructor(settings: Partial<Pick<LocalTestChainSettings, "head" | "maxLogBlocks">> = {}) {
    this.head = settings.head ?? DEFAULT_HEAD;
    this.maxLogBlocks = settings.maxLogBlocks ?? DEFAULT_MAX_LOG_BLOCKS;
  }

  /** block n of `chain` with full transactions or hashes; `null` above the head. */
  async block(chain: string, n: number, full: boolean): Promise<RawJson> {
    if (n > this.head) return new RawJson("null");
    return new RawJson(await this.ask({ op: "block", chain, number: n, full }));
  }

  /** The receipts of block n; `null` above the head. */
  async receipts(chain: string, n: number): Promise<RawJson> {
    if (n > this.head) return new RawJson("null");
    return new RawJson(await this.ask({ op: "receipts", chain, number: n }));
  }

  /** eth_getLogs over fromBlock..toBlock (inclusive; blocks above the head give none). */
  async logs(chain: string, filter: EthLogFilter): Promise<RawJson> {
    const { fromBlock: from, toBlock: to } = filter;
    if (from > to) throw new BackendError("InvalidParams", `fromBlock ${from} is after toBlock ${to}`);
    const span = to - from + 1;
    if (span > this.maxLogBlocks) {
      throw new BackendError(
        "InvalidParams",
        `blocks ${from}..${to} are ${span} blocks; the local test chain answers at most ${this.maxLogBlocks} per request ` +
          `(LOCALTESTSERVICE_MAX_LOG_BLOCKS): split the range`,
      );
    }
    if (from > this.head) return new RawJson("[]");
    return new RawJson(await this.ask({ op: "logs", chain, filter }));
  }

  async chainId(chain: string): Promise<number> {
    return JSON.parse(new TextDecoder().decode(await this.ask({ op: "chainId", chain }))) as number;
  }

  /** close ends the thread; requests waiting fail, and a later request starts a new thread. */
  close(): void {
    this.fail(new BackendError("BackendUnavailable", "local test chain: closed", { retryable: true }));
  }

  private ask(request: SyntheticRequest): Promise<Uint8Array> {
    const thread = this.thread ?? this.start();
    const id = this.nextId++;
    this.stats.requests++;
    return new Promise<Uint8Array>((resolve, reject) => {
      // Referenced only while it owes an answer: an idle thread never keeps a process (blockx exec, a test) alive.
      if (this.waiting.size === 0) thread.ref();
      this.waiting.set(id, { resolve, reject });
      thread.postMessage({ kind: "request", id, request } satisfies SyntheticThreadMessage);
    });
  }

  private start(): Worker {
    const thread = new Worker(threadEntry(import.meta.url, "runtime/chains/localtestservice/synthetic-chain-thread", new URL("./synthetic-chain-thread.ts", import.meta.url)));
    this.stats.threadStarts++;
    thread.unref();
    thread.onmessage = (ev: MessageEvent<SyntheticThreadReply>) => {
      const r = ev.data;
      const w = this.waiting.get(r.id);
      if (!w) return;
      this.waiting.delete(r.id);
      if (this.waiting.size === 0) thread.unref();
      if (r.ok) w.resolve(r.bytes);
      else w.reject(new BackendError("InvalidParams", r.message));
    };
    thread.onerror = (ev) => {
      // Generation holds no state worth keeping: fail what waits, and the next request starts a fresh thread.
      this.fail(new BackendError("BackendUnavailable", `local test chain: its generator thread failed: ${ev.message}`, { retryable: true }));
    };
    thread.postMessage({ kind: "init", head: this.head } satisfies SyntheticThreadMessage);
    this.thread = thread;
    return thread;
  }

  private fail(e: Error): void {
    const thread = this.thread;
    this.thread = undefined;
    thread?.terminate();
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const w of waiting) w.reject(e);
  }
}
