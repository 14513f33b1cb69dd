/**
 * Whose Invokes share an executor without an authenticated identity (BLOCKX_INSECURE): each
 * request its own owner by default (a recycled, fresh interpreter for each), or all one owner with
 * EXECUTOR_OWNER_WITHOUT_IDENTITY=shared. The compiled Sync Invoker with real sandboxed executors;
 * the function counts, in its interpreter's `sys` module, how many calls that interpreter has run.
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { BlockxProcess } from "../support/blockx-process";
import { SyncInvokerClient } from "../support/syncinvoker-client";

setDefaultTimeout(120_000);

const COUNT_CALLS = "import sys\ndef main(ctx, x):\n    sys._blockx_test_calls = getattr(sys, '_blockx_test_calls', 0) + 1\n    return sys._blockx_test_calls\n";

const started: Array<{ proc: BlockxProcess; client: SyncInvokerClient }> = [];
afterAll(async () => {
  for (const s of started) {
    s.client.close();
    await s.proc.stop("SIGKILL");
  }
});

/** callsSeen invokes COUNT_CALLS six times in a row against an invoker with `owner` and returns what each saw. */
async function callsSeen(owner: "task" | "shared"): Promise<number[]> {
  const proc = BlockxProcess.spawn(["syncinvoker"], { BLOCKX_INSECURE: "1", SYNCINVOKER_LISTEN: "127.0.0.1:0", EXECUTOR_COUNT: "2", EXECUTOR_OWNER_WITHOUT_IDENTITY: owner });
  // Plaintext on purpose (the test is about requests without an identity): a plaintext client too.
  const client = new SyncInvokerClient(await proc.grpcAddr(), { credentials: grpc.credentials.createInsecure(), options: {} });
  started.push({ proc, client });
  const seen: number[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await client.invoke({ source: COUNT_CALLS, args: "0" });
    if (!r.ok) throw new Error(r.details);
    expect(r.value.error).toBeUndefined();
    seen.push(JSON.parse(r.value.result.toString()));
  }
  return seen;
}

test("by default every request without an identity runs in an interpreter no other request used", async () => {
  expect(await callsSeen("task")).toEqual([1, 1, 1, 1, 1, 1]);
});

test("EXECUTOR_OWNER_WITHOUT_IDENTITY=shared: requests without an identity reuse warm executors", async () => {
  const seen = await callsSeen("shared");
  // Six calls over two executors: at least one interpreter ran three of them.
  expect(Math.max(...seen)).toBeGreaterThanOrEqual(3);
});
