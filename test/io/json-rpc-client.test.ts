/**
 * The rpc client against a real local HTTP server (Bun.serve) that answers batches, JSON-RPC
 * errors, 5xx/429, slow replies and garbage, and against a port where nothing listens.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { JsonRpcClientOptions } from "../../src/runtime/chains/rpc/json-rpc-client";
import { JsonRpcClient } from "../../src/runtime/chains/rpc/json-rpc-client";
import { JsonRpcError } from "../../src/runtime/chains/rpc/json-rpc-error";
import { BackendError } from "../../src/runtime/io/backends/backend-registry";
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
