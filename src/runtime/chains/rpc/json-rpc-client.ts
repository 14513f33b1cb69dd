import type { RpcChainConfig } from "../../../common/config/chains-config";
import type { JsonValue } from "../../json/raw-json";
import { BackendError } from "../../backend-error";
import type { ChainSource } from "../router/chain-source";
import { JsonRpcError } from "./json-rpc-error";
import { backoffMs } from "../../../common/retry/backoff";

export type JsonRpcClientOptions = Pick<RpcChainConfig, "endpoints" | "maxBatchSize" | "timeoutMs" | "maxAttempts" | "retryBackoffMs" | "requestBudgetMs" | "chainId"> & {
  /** RPC_MAX_ANSWER_BYTES: the most bytes one HTTP answer may have; default DEFAULT_RPC_MAX_ANSWER_BYTES. */
  readonly maxAnswerBytes?: number;
};

/**
 * DEFAULT_RPC_MAX_ANSWER_BYTES (RPC_MAX_ANSWER_BYTES): 16 MiB. An answer is parsed on the
 * process's main thread: 16 MiB of logs cost it about 45 ms here (decode, parse, and the JSON
 * written again for the executor), and half the 64 MiB executor frame is left for the call's
 * input. A node's full block is 0.1-2 MB, its receipts a few MB.
 */
export const DEFAULT_RPC_MAX_ANSWER_BYTES = 16 * 1024 * 1024;

interface Pending {
  readonly id: number;
  readonly method: string;
  readonly params: readonly JsonValue[];
  resolve(value: JsonValue): void;
  reject(error: Error): void;
}

type Attempt = { kind: "answer"; body: unknown } | { kind: "transient"; why: string } | { kind: "fatal"; error: BackendError } | { kind: "tooLarge" };
type Verified = { kind: "ok" } | { kind: "transient"; why: string } | { kind: "fatal"; error: BackendError };

/**
 * readBounded reads a response body up to `maxBytes`: the text, or null once it is known to be
 * longer (from Content-Length, or as soon as the chunks read pass it; the rest is never read).
 */
export async function readBounded(res: Response, maxBytes: number): Promise<string | null> {
  const declared = Number(res.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => {});
    return null;
  }
  if (res.body === null) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks, total));
}

const RESPONSE_ITEM = (v: unknown): v is { id?: unknown; result?: JsonValue; error?: { code?: unknown; message?: unknown } } => typeof v === "object" && v !== null && !Array.isArray(v);

/** redact keeps an endpoint's origin only: paths and query strings often carry API keys. */
export function redactEndpoint(url: string): string {
  try {
    const u = new URL(url);
    return u.pathname.length > 1 || u.search ? `${u.origin}/…` : u.origin;
  } catch {
    return "(bad url)";
  }
}

function describeFetchError(e: unknown, timeoutMs: number): string {
  const err = e as { name?: string; code?: string; message?: string };
  if (err.name === "TimeoutError" || err.name === "AbortError") return `timed out after ${timeoutMs} ms`;
  if (err.code && err.message?.startsWith(err.code)) return err.message;
  return [err.code, err.message].filter(Boolean).join(": ") || String(e);
}

/** summarize lists each distinct failure once, with how often it happened. */
function summarize(failures: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const f of failures) counts.set(f, (counts.get(f) ?? 0) + 1);
  return [...counts].map(([f, n]) => (n > 1 ? `${f} (x${n})` : f)).join("; ");
}

/**
 * JsonRpcClient speaks JSON-RPC 2.0 over HTTP to one chain's endpoints. Requests made in the
 * same tick go out as one batch (at most maxBatchSize each). Transient failures (connection
 * errors, HTTP 5xx and 429, timeouts, unreadable replies) are retried with doubling backoff on
 * the next endpoint, at most maxAttempts tries and within requestBudgetMs; a JSON-RPC error
 * from the node is final (JsonRpcError). The endpoint that last answered stays preferred.
 *
 * With a configured `chainId`, an endpoint is asked its eth_chainId before its first request and
 * again after every transient failure on it (a reconnect: behind a load balancer the next answer
 * may come from another node); a node of another chain fails the requests with ChainIdMismatch
 * naming both ids (never retried: it is a configuration error, not a passing fault), and the next
 * request tries the next endpoint. Concurrent batches to an endpoint share one check.
 */
export class JsonRpcClient implements ChainSource {
  readonly kind = "rpc" as const;
  readonly stats = { requests: 0, httpRequests: 0, retries: 0, chainIdChecks: 0 };
  /** Per endpoint: its chain id check, done or under way (absent: to be checked before its next request). */
  private readonly verified = new Map<number, Promise<Verified>>();
  private queue: Pending[] = [];
  private flushScheduled = false;
  private nextId = 1;
  private preferred = 0;
  private readonly maxAnswerBytes: number;

  constructor(
    readonly chain: string,
    private readonly opts: JsonRpcClientOptions,
  ) {
    if (opts.endpoints.length === 0) throw new Error(`chain ${chain}: no endpoints`);
    this.maxAnswerBytes = opts.maxAnswerBytes ?? DEFAULT_RPC_MAX_ANSWER_BYTES;
  }

  request(method: string, params: readonly JsonValue[]): Promise<JsonValue> {
    this.stats.requests++;
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, method, params, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    const queue = this.queue;
    this.queue = [];
    for (let i = 0; i < queue.length; i += this.opts.maxBatchSize) void this.send(queue.slice(i, i + this.opts.maxBatchSize), performance.now());
  }

  private async send(batch: Pending[], started: number): Promise<void> {
    const body = JSON.stringify(batch.length === 1 ? frame(batch[0]!) : batch.map(frame));
    const failures: string[] = [];
    for (let attempt = 1; ; attempt++) {
      const index = this.preferred % this.opts.endpoints.length;
      const url = this.opts.endpoints[index]!;
      const timeoutMs = Math.max(1, Math.min(this.opts.timeoutMs, Math.floor(this.opts.requestBudgetMs - (performance.now() - started))));
      const check = await this.verify(index, url, timeoutMs);
      if (check.kind === "fatal") {
        if (this.preferred % this.opts.endpoints.length === index) this.preferred = index + 1; // the next request tries another node
        return batch.forEach((p) => p.reject(check.error));
      }
      const outcome: Attempt = check.kind === "transient" ? check : await this.post(url, body, timeoutMs);
      if (outcome.kind === "transient") this.verified.delete(index); // a reconnect: check the node again
      if (outcome.kind === "answer") return this.dispatch(batch, outcome.body, url);
      if (outcome.kind === "fatal") return batch.forEach((p) => p.reject(outcome.error));
      if (outcome.kind === "tooLarge") return this.tooLarge(batch, url, started);
      failures.push(`${redactEndpoint(url)}: ${outcome.why}`);
      if (this.preferred % this.opts.endpoints.length === index) this.preferred = index + 1; // fail over
      const backoff = backoffMs(this.opts.retryBackoffMs, this.opts.retryBackoffMs * 8, attempt - 1);
      const elapsed = performance.now() - started;
      if (attempt >= this.opts.maxAttempts || elapsed + backoff >= this.opts.requestBudgetMs) {
        const error = new BackendError(
          "BackendUnavailable",
          `chain ${this.chain}: no answer after ${attempt} attempt(s) in ${Math.round(elapsed)} ms: ${summarize(failures)}`,
          { retryable: true },
        );
        return batch.forEach((p) => p.reject(error));
      }
      this.stats.retries++;
      if (backoff > 0) await Bun.sleep(backoff);
    }
  }

  /**
   * tooLarge: the answer to `batch` passed RPC_MAX_ANSWER_BYTES. A batch is sent again as two
   * halves (each within the request's budget), so that the requests whose answers fit get them
   * and the one that does not is named; a single request fails with AnswerTooLarge (never
   * retried: the node would answer the same).
   */
  private tooLarge(batch: Pending[], url: string, started: number): void {
    if (batch.length > 1) {
      const half = Math.ceil(batch.length / 2);
      void this.send(batch.slice(0, half), started);
      void this.send(batch.slice(half), started);
      return;
    }
    const p = batch[0]!;
    p.reject(
      new BackendError(
        "AnswerTooLarge",
        `chain ${this.chain}: the answer to ${p.method} from ${redactEndpoint(url)} is over the limit of ${this.maxAnswerBytes} bytes (RPC_MAX_ANSWER_BYTES); ` +
          `ask for less (a narrower eth_getLogs range, an address or topic filter) or raise the limit`,
      ),
    );
  }

  /**
   * verify: the endpoint's chain id check (ok at once without a configured chainId, or once it
   * passed since the endpoint's last failure). A failed check is forgotten so the next batch asks again.
   */
  private verify(index: number, url: string, timeoutMs: number): Promise<Verified> {
    const want = this.opts.chainId;
    if (want === undefined) return Promise.resolve({ kind: "ok" });
    let v = this.verified.get(index);
    if (v === undefined) {
      this.stats.chainIdChecks++;
      const checking: Promise<Verified> = this.post(url, JSON.stringify({ jsonrpc: "2.0", id: 0, method: "eth_chainId", params: [] }), timeoutMs).then((a): Verified => {
        if (a.kind === "transient" || a.kind === "fatal") return a;
        if (a.kind === "tooLarge") return { kind: "transient", why: "eth_chainId answer over RPC_MAX_ANSWER_BYTES" };
        const result = RESPONSE_ITEM(a.body) ? a.body.result : undefined;
        const got = typeof result === "string" && /^0x[0-9a-f]+$/i.test(result) ? Number(BigInt(result)) : undefined;
        if (got === undefined) return { kind: "transient", why: `eth_chainId answered ${JSON.stringify(a.body).slice(0, 80)}` };
        if (got !== want) {
          return {
            kind: "fatal",
            error: new BackendError(
              "ChainIdMismatch",
              `chain ${this.chain}: node ${redactEndpoint(url)} reports chain id ${got}, but CHAINS_CONFIG says chainId ${want} for ${this.chain}; fix the endpoint or the chainId`,
            ),
          };
        }
        return { kind: "ok" };
      });
      this.verified.set(index, (v = checking));
      void checking.then((r) => {
        if (r.kind !== "ok" && this.verified.get(index) === checking) this.verified.delete(index);
      });
    }
    return v;
  }

  private async post(url: string, body: string, timeoutMs: number): Promise<Attempt> {
    this.stats.httpRequests++;
    let res: Response;
    let text: string | null;
    try {
      res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body, signal: AbortSignal.timeout(timeoutMs) });
      // Read as a stream and stopped past the bound: an answer of any size costs at most the bound in memory and parsing.
      text = await readBounded(res, this.maxAnswerBytes);
    } catch (e) {
      return { kind: "transient", why: describeFetchError(e, timeoutMs) };
    }
    if (res.status === 429 || res.status >= 500) return { kind: "transient", why: `HTTP ${res.status}` };
    if (!res.ok) return { kind: "fatal", error: new BackendError("BackendRejected", `chain ${this.chain}: ${redactEndpoint(url)} answered HTTP ${res.status}: ${(text ?? "(an answer over RPC_MAX_ANSWER_BYTES)").slice(0, 200)}`) };
    if (text === null) return { kind: "tooLarge" };
    try {
      return { kind: "answer", body: JSON.parse(text) };
    } catch {
      return { kind: "transient", why: `reply is not JSON: ${JSON.stringify(text.slice(0, 80))}` };
    }
  }

  private dispatch(batch: Pending[], body: unknown, url: string): void {
    const where = `chain ${this.chain} node ${redactEndpoint(url)}`;
    const items = Array.isArray(body) ? body : [body];
    const byId = new Map<unknown, unknown>();
    for (const item of items) if (RESPONSE_ITEM(item)) byId.set(item.id, item);
    // A batch rejected as a whole comes back as one error object with id null.
    const whole = !Array.isArray(body) && batch.length > 1 && RESPONSE_ITEM(body) && body.error ? body : undefined;
    for (const p of batch) {
      const item = whole ?? byId.get(p.id);
      if (!RESPONSE_ITEM(item)) {
        p.reject(new BackendError("BackendUnavailable", `${where}: no answer for ${p.method} in the reply`, { retryable: true }));
      } else if (item.error) {
        const code = typeof item.error.code === "number" ? item.error.code : 0;
        p.reject(new JsonRpcError(code, typeof item.error.message === "string" ? item.error.message : JSON.stringify(item.error), where));
      } else if ("result" in item) {
        p.resolve(item.result ?? null);
      } else {
        p.reject(new BackendError("BackendUnavailable", `${where}: malformed answer for ${p.method}`, { retryable: true }));
      }
    }
  }
}

function frame(p: Pending): { jsonrpc: "2.0"; id: number; method: string; params: readonly JsonValue[] } {
  return { jsonrpc: "2.0", id: p.id, method: p.method, params: p.params };
}
