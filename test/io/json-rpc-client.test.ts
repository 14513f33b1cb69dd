/**
 * The rpc client against a real local HTTP server (Bun.serve) that answers batches, JSON-RPC
 * errors, 5xx/429, slow replies and garbage, and against a port where nothing listens.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { JsonRpcClientOptions } from "../../src/runtime/chains/rpc/json-rpc-client";
import { JsonRpcClient } from "../../src/runtime/chains/rpc/json-rpc-client";
import { JsonRpcError } from "../../src/runtime/chains/rpc/json-rpc-error";
import { BackendError } from "../../src/runtime/backend-error";
import { freePort } from "../support/ports";

type Req = { jsonrpc: string; id: number; method: string; params: unknown[] };
type Handler = (body: Req | Req[], n: number) => Response | Promise<Response>;

const servers: ReturnType<typeof Bun.serve>[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.stop(true);
});

/** node starts a JSON-RPC server whose answers come from `handler`; `bodies` records every HTTP body. */
function node(handler: Handler) {
  const bodies: (Req | Req[])[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (r) => {
      const body = (await r.json()) as Req | Req[];
      bodies.push(body);
      return handler(body, bodies.length);
    },
  });
  servers.push(server);
  return { url: `http://127.0.0.1:${server.port}`, bodies };
}

/** echo answers every request with its method and first param. */
const echo: Handler = (body) => {
  const answer = (q: Req) => ({ jsonrpc: "2.0", id: q.id, result: `${q.method}:${String(q.params[0])}` });
  return Response.json(Array.isArray(body) ? body.map(answer).reverse() : answer(body));
};

function client(endpoints: string[], opts: Partial<JsonRpcClientOptions> = {}) {
  return new JsonRpcClient("testchain", { endpoints, maxBatchSize: 50, timeoutMs: 2_000, maxAttempts: 3, retryBackoffMs: 5, requestBudgetMs: 4_000, ...opts });
}

async function failure(p: Promise<unknown>): Promise<BackendError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof BackendError) return e;
    throw e;
  }
  throw new Error("expected a failure");
}

describe("batching", () => {
  test("requests of one tick go as one JSON-RPC batch; answers are matched by id whatever their order", async () => {
    const n = node(echo);
    const c = client([n.url]);
    const got = await Promise.all([1, 2, 3, 4, 5].map((i) => c.request("eth_getBlockByNumber", [`0x${i}`, true])));
    expect(got).toEqual([1, 2, 3, 4, 5].map((i) => `eth_getBlockByNumber:0x${i}`));
    expect(n.bodies.length).toBe(1);
    expect((n.bodies[0] as Req[]).map((q) => q.params[0])).toEqual(["0x1", "0x2", "0x3", "0x4", "0x5"]);
    expect((n.bodies[0] as Req[])[0]).toMatchObject({ jsonrpc: "2.0", method: "eth_getBlockByNumber" });
  });

  test("a batch is at most maxBatchSize requests; a lone request goes unbatched; later ticks make new batches", async () => {
    const n = node(echo);
    const c = client([n.url], { maxBatchSize: 2 });
    await Promise.all([1, 2, 3, 4, 5].map((i) => c.request("m", [i])));
    expect(n.bodies.map((b) => (Array.isArray(b) ? b.length : "single"))).toEqual([2, 2, "single"]);
    expect(await c.request("eth_blockNumber", [])).toBe("eth_blockNumber:undefined");
    expect(n.bodies.length).toBe(4);
    expect(c.stats).toMatchObject({ requests: 6, httpRequests: 4, retries: 0 });
  });
});

describe("JSON-RPC errors", () => {
  test("one failed request in a batch is a JsonRpcError with the node's code and message; the others succeed; no retry", async () => {
    const n = node((body) =>
      Response.json((body as Req[]).map((q) => (q.method === "eth_call" ? { jsonrpc: "2.0", id: q.id, error: { code: -32000, message: "execution reverted" } } : { jsonrpc: "2.0", id: q.id, result: "0x1" }))),
    );
    const c = client([n.url]);
    const [a, b] = [c.request("eth_chainId", []), c.request("eth_call", [{}, "latest"])];
    expect(await a).toBe("0x1");
    const e = await failure(b);
    expect(e).toBeInstanceOf(JsonRpcError);
    expect(e.type).toBe("JsonRpcError");
    expect((e as JsonRpcError).code).toBe(-32000);
    expect(e.message).toBe(`JSON-RPC error -32000 from chain testchain node ${n.url}: execution reverted`);
    expect(e.retryable).toBe(false);
    expect(n.bodies.length).toBe(1);
  });

  test("a batch rejected as a whole (one error object) fails every request of it with that error", async () => {
    const n = node(() => Response.json({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "batch too large" } }));
    const c = client([n.url]);
    const errors = await Promise.all([c.request("a", []), c.request("b", [])].map(failure));
    for (const e of errors) expect(e.message).toContain("JSON-RPC error -32600");
  });

  test("an HTTP 4xx other than 429 is final: BackendRejected with the status and body", async () => {
    const n = node(() => new Response("unauthorized: bad key", { status: 401 }));
    const e = await failure(client([n.url]).request("eth_blockNumber", []));
    expect(e.type).toBe("BackendRejected");
    expect(e.message).toContain("HTTP 401: unauthorized: bad key");
    expect(n.bodies.length).toBe(1);
  });
});

describe("transient failures are retried within the attempts and the budget", () => {
  test("HTTP 503 and 429 are retried, then the answer arrives", async () => {
    const n = node((body, k) => (k === 1 ? new Response("busy", { status: 503 }) : k === 2 ? new Response("slow down", { status: 429 }) : echo(body, k)));
    const c = client([n.url]);
    expect(await c.request("eth_blockNumber", [])).toBe("eth_blockNumber:undefined");
    expect(c.stats).toMatchObject({ httpRequests: 3, retries: 2 });
  });

  test("a node slower than timeoutMs: every attempt times out, then BackendUnavailable (retryable) says so", async () => {
    const n = node(async (body, k) => {
      await Bun.sleep(400);
      return echo(body, k);
    });
    const e = await failure(client([n.url], { timeoutMs: 50, maxAttempts: 2 }).request("eth_blockNumber", []));
    expect(e.type).toBe("BackendUnavailable");
    expect(e.retryable).toBe(true);
    expect(e.message).toContain("chain testchain: no answer after 2 attempt(s)");
    expect(e.message).toContain(`${n.url}: timed out after 50 ms`);
  });

  test("a reply that is not JSON is retried, and named when it persists", async () => {
    const n = node(() => new Response("<html>gateway</html>", { status: 200 }));
    const e = await failure(client([n.url], { maxAttempts: 2 }).request("eth_blockNumber", []));
    expect(e.type).toBe("BackendUnavailable");
    expect(e.message).toContain('reply is not JSON: "<html>gateway</html>"');
    expect(n.bodies.length).toBe(2);
  });

  test("the request budget bounds the retries before maxAttempts", async () => {
    const n = node(() => new Response("down", { status: 500 }));
    const e = await failure(client([n.url], { maxAttempts: 20, retryBackoffMs: 100, requestBudgetMs: 250 }).request("x", []));
    expect(e.type).toBe("BackendUnavailable");
    expect(n.bodies.length).toBeLessThan(20);
    expect(e.message).toMatch(/no answer after \d attempt\(s\)/);
  });
});

describe("several endpoints per chain", () => {
  test("a refused endpoint fails over to the next one, which then stays preferred", async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const n = node(echo);
    const c = client([dead, n.url]);
    expect(await c.request("eth_blockNumber", [])).toBe("eth_blockNumber:undefined");
    expect(c.stats).toMatchObject({ httpRequests: 2, retries: 1 });
    expect(await c.request("eth_chainId", [])).toBe("eth_chainId:undefined");
    expect(c.stats.httpRequests).toBe(3);
  });

  test("every endpoint down: the error names each endpoint and its failure; paths are redacted (they may hold keys)", async () => {
    const a = `http://127.0.0.1:${await freePort()}/v3/SECRETKEY`;
    const b = `http://127.0.0.1:${await freePort()}`;
    const e = await failure(client([a, b], { maxAttempts: 3 }).request("eth_blockNumber", []));
    expect(e.type).toBe("BackendUnavailable");
    expect(e.message).toContain("no answer after 3 attempt(s)");
    expect(e.message).toContain(`${new URL(a).origin}/…: `);
    expect(e.message).toContain(`${b}: `);
    expect(e.message).not.toContain("SECRETKEY");
  });
});

describe("an answer's size is bounded (RPC_MAX_ANSWER_BYTES): read as a stream, stopped past the bound", () => {
  /** endless: a 200 answer that never ends (chunks of 64 KiB while the reader pulls), as a node streaming a huge log range would. */
  const endless = (served: { bytes: number }) => {
    const chunk = new TextEncoder().encode(`{"jsonrpc":"2.0","id":1,"result":["${"0".repeat(64 * 1024)}`);
    return new Response(
      new ReadableStream({
        pull(c) {
          served.bytes += chunk.byteLength;
          c.enqueue(chunk);
        },
      }),
      { headers: { "content-type": "application/json" } },
    );
  };

  test("an answer that never ends fails its request with AnswerTooLarge naming the method, the bound and the variable; it is not retried", async () => {
    const served = { bytes: 0 };
    const n = node(() => endless(served));
    const e = await failure(client([n.url], { maxAnswerBytes: 1 << 20 }).request("eth_getLogs", [{ fromBlock: "0x0", toBlock: "0x2710" }]));
    expect(e.type).toBe("AnswerTooLarge");
    expect(e.retryable).toBe(false);
    expect(e.message).toContain(`chain testchain: the answer to eth_getLogs from ${n.url} is over the limit of 1048576 bytes (RPC_MAX_ANSWER_BYTES)`);
    expect(n.bodies.length).toBe(1);
    // The client stopped reading: what the server got to write is the bound plus what was in flight, not the stream.
    expect(served.bytes).toBeLessThan(64 << 20);
  });

  test("a Content-Length over the bound fails at once, before the body is read", async () => {
    const big = JSON.stringify({ jsonrpc: "2.0", id: 1, result: "x".repeat(300_000) });
    const n = node(() => new Response(big, { headers: { "content-type": "application/json", "content-length": String(big.length) } }));
    const e = await failure(client([n.url], { maxAnswerBytes: 100_000 }).request("eth_getBlockReceipts", ["0x1"]));
    expect(e.type).toBe("AnswerTooLarge");
    expect(e.message).toContain("the answer to eth_getBlockReceipts");
    expect(e.message).toContain("100000 bytes (RPC_MAX_ANSWER_BYTES)");
  });

  test("a batch whose answer is over the bound is sent again in halves: the requests that fit are answered, the one that does not is named", async () => {
    // Each request's answer: 10 KB, except eth_getLogs's 300 KB; the bound (100 KB) fits any answer but the big one.
    const answer = (q: Req) => ({ jsonrpc: "2.0", id: q.id, result: q.method === "eth_getLogs" ? "L".repeat(300_000) : `${q.method}:${"s".repeat(10_000)}` });
    const n = node((body) => Response.json(Array.isArray(body) ? body.map(answer) : answer(body)));
    const c = client([n.url], { maxAnswerBytes: 100_000 });
    const [a, logs, b, d] = await Promise.allSettled([c.request("eth_getBlockByNumber", ["0x1", true]), c.request("eth_getLogs", [{}]), c.request("eth_chainId", []), c.request("eth_blockNumber", [])]);
    expect(a).toMatchObject({ status: "fulfilled", value: expect.stringMatching(/^eth_getBlockByNumber:/) });
    expect(b).toMatchObject({ status: "fulfilled", value: expect.stringMatching(/^eth_chainId:/) });
    expect(d).toMatchObject({ status: "fulfilled", value: expect.stringMatching(/^eth_blockNumber:/) });
    expect(logs.status).toBe("rejected");
    const e = (logs as PromiseRejectedResult).reason as BackendError;
    expect([e.type, e.message]).toEqual(["AnswerTooLarge", expect.stringContaining("the answer to eth_getLogs from")]);
    // The batch of 4, then its halves (2 + 2), then the half holding eth_getLogs in halves again (1 + 1);
    // halves go out together, so they may arrive in either order.
    const sent = n.bodies.map((x) => (Array.isArray(x) ? x.map((q) => q.method) : [x.method]).join(" "));
    expect(sent[0]).toBe("eth_getBlockByNumber eth_getLogs eth_chainId eth_blockNumber");
    expect(sent.slice(1).sort()).toEqual(["eth_chainId eth_blockNumber", "eth_getBlockByNumber", "eth_getBlockByNumber eth_getLogs", "eth_getLogs"]);
  });

  test("an answer within the bound is read whole, whatever its chunks", async () => {
    const result = "r".repeat(90_000);
    const n = node(() => Response.json({ jsonrpc: "2.0", id: 1, result }));
    expect(await client([n.url], { maxAnswerBytes: 100_000 }).request("eth_getBlockByNumber", ["0x1", true])).toBe(result);
  });
});
