/**
 * `blockx exec` as a new user meets it: the README's first example (the guide's fn.py over the
 * local chain), a real node through CHAINS_CONFIG (a JSON-RPC server on loopback), every
 * example of examples/ with values recomputed from the chain, stdout that is only the
 * outcome (`| jq` works), a traceback naming the user's file, and a --help that shows FILE.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SWAP_TOPIC, SyntheticChain, TRANSFER_TOPIC } from "../../src/runtime/chains/localtestservice/synthetic-chain";
import { BLOCKX_BINARY } from "../support/blockx-process";

const REPO = join(import.meta.dir, "..", "..");
const EXAMPLES = join(REPO, "examples");
const ethereum = new SyntheticChain("ethereum");
let dir = "";

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "blockx-exec-cli-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function sh(argv: string[], env: Record<string, string> = {}, cwd = dir) {
  const p = Bun.spawn(argv, { cwd, env: { PATH: process.env.PATH!, ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { out, err, code };
}

/** exec runs `blockx exec ARGS`; stdout must be exactly one JSON document (the outcome). */
async function exec(args: string[], env: Record<string, string> = {}, cwd = dir) {
  const r = await sh([BLOCKX_BINARY, "exec", ...args], env, cwd);
  let outcome: Record<string, unknown>;
  try {
    outcome = JSON.parse(r.out) as Record<string, unknown>;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${r.code}):\n${r.out}\nstderr:\n${r.err}`);
  }
  return { ...r, outcome };
}

/** The first ```python block of the README's "A short guide": the guide's fn.py. */
function guideFunction(): string {
  const readme = readFileSync(join(REPO, "README.md"), "utf8");
  const guide = readme.slice(readme.indexOf("## A short guide"));
  const m = /```python\n([\s\S]*?)```/.exec(guide);
  if (!m) throw new Error("README: no python block in 'A short guide'");
  return m[1]!;
}

describe("blockx exec serves IO", () => {
  test("the README's first example: the guide's fn.py over the local chain, as written", async () => {
    writeFileSync(join(dir, "fn.py"), guideFunction());
    const r = await exec(["fn.py", '{"chain": "ethereum", "blockNumber": 1}']);
    expect(r.code).toBe(0);
    expect(r.outcome.ok).toBe(true);
    const rows = r.outcome.value as { block: number; tx_count: number }[];
    expect(rows[0]).toMatchObject({ block: 1, tx_count: ethereum.block(1, false)!.transactions.length });
  }, 60_000);

  test("CHAINS_CONFIG sends a chain to a real JSON-RPC node: the function reads that node's blocks through ctx.blockdb", async () => {
    // The node serves another synthetic chain: its hashes differ from the local chain's.
    const nodeChain = new SyntheticChain("stubnet");
    const methods: string[] = [];
    const answer = (q: { id: number; method: string; params: unknown[] }) => {
      methods.push(q.method);
      const n = typeof q.params[0] === "string" && q.params[0].startsWith("0x") ? parseInt(q.params[0], 16) : nodeChain.head();
      const result =
        q.method === "eth_blockNumber" ? `0x${nodeChain.head().toString(16)}` : q.method === "eth_getBlockByNumber" ? nodeChain.block(n, q.params[1] === true) : null;
      return { jsonrpc: "2.0", id: q.id, result };
    };
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async (req) => {
        const body = (await req.json()) as Parameters<typeof answer>[0] | Parameters<typeof answer>[0][];
        return Response.json(Array.isArray(body) ? body.map(answer) : answer(body));
      },
    });
    try {
      writeFileSync(join(dir, "hash.py"), 'def main(ctx, input):\n    return ctx.blockdb.block(input["blockNumber"], full=False)["hash"]\n');
      const chains = JSON.stringify({ chains: { ethereum: { source: "rpc", endpoints: [`http://127.0.0.1:${server.port}`] } } });
      const viaNode = await exec(["hash.py", '{"chain": "ethereum", "blockNumber": 7}'], { CHAINS_CONFIG: chains });
      expect(viaNode.code).toBe(0);
      expect(viaNode.outcome.value).toBe(nodeChain.blockHash(7));
      expect(methods).toContain("eth_getBlockByNumber");
      // Without CHAINS_CONFIG the same function reads the local synthetic chain.
      const local = await exec(["hash.py", '{"chain": "ethereum", "blockNumber": 7}']);
      expect(local.outcome.value).toBe(ethereum.blockHash(7));
      expect(local.outcome.value).not.toBe(viaNode.outcome.value);
    } finally {
      server.stop(true);
    }
  }, 60_000);

  test("every example of examples/ runs under exec, with values recomputed from the chain", async () => {
    const n = 18_000_000;
    const stats = await exec([join(EXAMPLES, "block-stats", "block_stats.py"), JSON.stringify({ chain: "ethereum", blockNumber: n })]);
    expect(stats.code).toBe(0);
    const b = ethereum.block(n, false)!;
    expect(stats.outcome.value).toEqual([
      expect.objectContaining({ block: n, tx_count: b.transactions.length, gas_used: parseInt(b.gasUsed, 16), timestamp: parseInt(b.timestamp, 16) }),
    ]);

    const transfers = await exec([join(EXAMPLES, "erc20-transfers", "erc20_transfers.py"), JSON.stringify({ chain: "ethereum", fromBlock: n, toBlock: n + 9 })]);
    expect(transfers.code).toBe(0);
    let expected = 0;
    for (let k = n; k <= n + 9; k++) for (const r of ethereum.blockReceipts(k)!) expected += r.logs.filter((l) => l.topics[0] === TRANSFER_TOPIC && l.topics.length === 3).length;
    expect((transfers.outcome.value as unknown[]).length).toBe(expected);
    expect(expected).toBeGreaterThan(0);

    const swaps = await exec([join(EXAMPLES, "uniswap-swaps", "uniswap_swaps.py"), JSON.stringify({ chain: "ethereum", fromBlock: n, toBlock: n + 9 })]);
    expect(swaps.code).toBe(0);
    let swapCount = 0;
    for (let k = n; k <= n + 9; k++) for (const r of ethereum.blockReceipts(k)!) swapCount += r.logs.filter((l) => l.topics[0] === SWAP_TOPIC).length;
    expect((swaps.outcome.value as unknown[]).length).toBe(swapCount);
    expect(swapCount).toBeGreaterThan(0);

    // range_summary calls block_summary by name: exec loads <name>.py beside the file.
    const fanout = await exec([join(EXAMPLES, "fanout", "range_summary.py"), JSON.stringify({ chain: "ethereum", fromBlock: n, toBlock: n + 4 })]);
    expect(fanout.code).toBe(0);
    let tx = 0;
    for (let k = n; k <= n + 4; k++) tx += ethereum.block(k, false)!.transactions.length;
    expect(fanout.outcome.value).toMatchObject({ fromBlock: n, toBlock: n + 4, blocks: 5, tx_count: tx });
  }, 90_000);
});

describe("blockx exec output", () => {
  test("stdout carries only the outcome, logs go to stderr: `blockx exec ... | jq` works at the default log level", async () => {
    writeFileSync(join(dir, "inc.py"), "def main(ctx, x):\n    ctx.log('adding one')\n    return x + 1\n");
    const r = await sh(["sh", "-c", `'${BLOCKX_BINARY}' exec inc.py 41 | jq -r .value`], { BLOCKX_LOG_LEVEL: "info" });
    expect(r.code).toBe(0);
    expect(r.out).toBe("42\n");
    expect(r.err).toContain('"msg":"executor ready"');
  }, 60_000);

  test("a traceback names the function's file and its lines, not <blockx:main@digest>", async () => {
    writeFileSync(join(dir, "bad.py"), "def main(ctx, x):\n    return helper(x)\n\n\ndef helper(x):\n    return 1 / x\n");
    const r = await exec(["bad.py", "0"]);
    expect(r.code).toBe(1);
    const error = r.outcome.error as { code: string; traceback: string };
    expect(error.code).toBe("USER_ERROR");
    expect(error.traceback).toContain('File "bad.py", line 2, in main');
    expect(error.traceback).toContain('File "bad.py", line 6, in helper');
    expect(error.traceback).toContain("return 1 / x");
    expect(error.traceback).not.toContain("<blockx:");
    writeFileSync(join(dir, "syntax.py"), "def main(ctx, x)\n    return 1\n");
    const s = await exec(["syntax.py"]);
    expect((s.outcome.error as { traceback: string }).traceback).toContain('File "syntax.py", line 1');
  }, 60_000);

  test("exec --help shows the FILE and INPUT_JSON arguments and the IO variables it reads", async () => {
    const r = await sh([BLOCKX_BINARY, "exec", "--help"]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("usage: blockx exec FILE [INPUT_JSON] [--entry NAME]");
    expect(r.out).toMatch(/^ {2}FILE {2,}/m);
    expect(r.out).toContain("CHAINS_CONFIG");
    expect(r.out).toContain("EXECUTOR_COUNT");
    expect(r.out).not.toContain("BLOCKX_COORDINATOR_ADDRS");
  });
});
