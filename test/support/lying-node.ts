type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** One JSON-RPC request as the lying node sees it. */
export interface RpcItem {
  readonly id: Json;
  readonly method: string;
  readonly params: Json[];
}

/**
 * Lie: what the node answers instead of the truth for one request, given the real node's result;
 * `undefined` passes the truth on. Return `{ error: ... }` from `fail` to answer an HTTP error.
 */
export type Lie = (req: RpcItem, truth: Json) => Json | undefined;

/**
 * LyingNode is a real HTTP JSON-RPC server on loopback in front of a real node (anvil): every
 * request, single or batched, is sent on to the node and its answer passed back, except where the
 * test's `lie` replaces a result (another chain id, a head far ahead, a null block, a block of
 * another number, a broken parent link). `failNext(n)` answers the next n HTTP requests with 503
 * (a node restarting: the client reconnects). It counts what it was asked, by method.
 */
export class LyingNode {
  lie: Lie = () => undefined;
  private failing = 0;
  readonly asked = new Map<string, number>();
  private readonly server: ReturnType<typeof Bun.serve>;

  constructor(private readonly target: string) {
    this.server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (r) => this.answer(r),
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.server.port}`;
  }

  /** failNext: the next `n` HTTP requests are answered 503. */
  failNext(n: number): void {
    this.failing = n;
  }

  count(method: string): number {
    return this.asked.get(method) ?? 0;
  }

  private async answer(r: Request): Promise<Response> {
    if (this.failing > 0) {
      this.failing--;
      return new Response("restarting", { status: 503 });
    }
    const body = (await r.json()) as RpcItem | RpcItem[];
    const items = Array.isArray(body) ? body : [body];
    for (const q of items) this.asked.set(q.method, this.count(q.method) + 1);
    const res = await fetch(this.target, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(items.map((q) => ({ jsonrpc: "2.0", ...q }))) });
    const truths = (await res.json()) as { id: Json; result?: Json; error?: Json }[];
    const byId = new Map(truths.map((t) => [JSON.stringify(t.id), t]));
    const out = items.map((q) => {
      const t = byId.get(JSON.stringify(q.id))!;
      if (t.error !== undefined) return t;
      const lied = this.lie(q, t.result ?? null);
      return { jsonrpc: "2.0", id: q.id, result: lied === undefined ? (t.result ?? null) : lied };
    });
    return Response.json(Array.isArray(body) ? out : out[0]);
  }

  stop(): void {
    this.server.stop(true);
  }
}
