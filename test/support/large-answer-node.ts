/**
 * large-answer-node.ts: a JSON-RPC node, in a process of its own, whose eth_getLogs answers are
 * as large as a client allows: real log objects (the synthetic chain's) up to 64 KiB under
 * `bytes`, and, for a filter from block 0xbad, an answer that never ends. eth_chainId and
 * eth_blockNumber answer small. Its own process, so that building and sending the answers does
 * not slow the test process that times the Worker. `LargeAnswerNode.start` runs it and returns
 * its URL; run as a script, it prints `listening PORT` and serves until killed.
 */
import { SyntheticChain } from "../../src/runtime/chains/localtestservice/synthetic-chain";

type Req = { id: number; method: string; params: { fromBlock?: string }[] };

function logsResult(bytes: number): string {
  const one = new SyntheticChain("ethereum").logs({ fromBlock: 1_000, toBlock: 1_009 }).map((l) => JSON.stringify(l));
  const parts: string[] = [];
  let size = 2;
  for (let i = 0; size + one[i % one.length]!.length + 1 < bytes - 64 * 1024; i++) {
    parts.push(one[i % one.length]!);
    size += one[i % one.length]!.length + 1;
  }
  return `[${parts.join(",")}]`;
}

function serve(bytes: number): number {
  const result = logsResult(bytes);
  const answer = (q: Req) => {
    const value = q.method === "eth_getLogs" ? result : q.method === "eth_chainId" ? '"0x539"' : '"0x1312d00"';
    return `{"jsonrpc":"2.0","id":${q.id},"result":${value}}`;
  };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (r) => {
      const body = (await r.json()) as Req | Req[];
      if (!Array.isArray(body) && body.method === "eth_getLogs" && body.params[0]?.fromBlock === "0xbad") {
        const chunk = new TextEncoder().encode(`{"jsonrpc":"2.0","id":${body.id},"result":["${"0".repeat(64 * 1024)}`);
        return new Response(new ReadableStream({ pull: (c) => c.enqueue(chunk) }), { headers: { "content-type": "application/json" } });
      }
      return new Response(Array.isArray(body) ? `[${body.map(answer).join(",")}]` : answer(body), { headers: { "content-type": "application/json" } });
    },
  });
  return server.port!;
}

export class LargeAnswerNode {
  private constructor(
    readonly url: string,
    private readonly proc: ReturnType<typeof Bun.spawn>,
  ) {}

  /** start runs the node in its own process (dying with the test's) with answers of just under `bytes`. */
  static async start(bytes: number): Promise<LargeAnswerNode> {
    const proc = Bun.spawn(["setpriv", "--pdeathsig", "KILL", "--", process.execPath, import.meta.path, String(bytes)], { stdout: "pipe", stderr: "inherit" });
    const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
    let text = "";
    while (!/listening \d+\n/.test(text)) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`large-answer-node exited before listening: ${text}`);
      text += new TextDecoder().decode(value);
    }
    reader.releaseLock();
    return new LargeAnswerNode(`http://127.0.0.1:${/listening (\d+)/.exec(text)![1]}`, proc);
  }

  async stop(): Promise<void> {
    this.proc.kill("SIGKILL");
    await this.proc.exited;
  }
}

if (import.meta.main) {
  console.log(`listening ${serve(Number(process.argv[2]))}`);
}
