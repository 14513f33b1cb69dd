/**
 * Two more per-Worker bounds under authenticated load (issue 51, item 6), against the compiled
 * Worker, each driven past its bound with the Worker's RSS (VmRSS) read before and after:
 * - WatchTasks streams: any number could be open, each holding memory for as long as its client
 *   kept it. Past WORKER_MAX_WATCH_STREAMS one more is RESOURCE_EXHAUSTED naming the variable; a
 *   closed stream gives its place back.
 * - synthetic chains: the local test chain kept one chain (its remembered hashes and accounts) per
 *   distinct chain name a function passed, for the process's life. It now keeps the 64 used last;
 *   a function naming 3,000 chains runs, and the same chain asked again gives the same block.
 */
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { TaskState, type TaskSnapshot } from "../../src/gen/worker/v1/worker";
import { inputsTask } from "../support/worker-client";
import { startWorker } from "../support/worker-process";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]!) * 1024;
const MiB = 1024 * 1024;

describe("per-Worker bounds on streams and synthetic chains", () => {
  /** Growth allowed while 2,000 refused WatchTasks come and go over 100 open ones (measured 2026-12-06: +23 to +35 MiB). */
  const WATCH_RSS_GROWTH_BOUND = 96 * MiB;

  test("WatchTasks past WORKER_MAX_WATCH_STREAMS (100): RESOURCE_EXHAUSTED naming it; a closed stream gives its place back; RSS stays bounded", async () => {
    const { client, process: w } = await startWorker({ WORKER_MAX_WATCH_STREAMS: "100" }, cleanups);
    const task = "watched-long";
    const sub = await client.submitTask(inputsTask(task, "import time\ndef main(ctx, x):\n    time.sleep(120)\n    return x\n", [1]));
    expect(sub.ok).toBe(true);
    cleanups.push(() => client.cancelTask(task));
    /** open starts a WatchTasks and resolves with "open" at its first snapshot, or the status that refused it. */
    const open = (): Promise<{ call: grpc.ClientReadableStream<TaskSnapshot>; outcome: string }> =>
      new Promise((resolve) => {
        const call = client.client.watchTasks({ taskIds: [task], withResults: false, terminalOnly: false }, new grpc.Metadata());
        call.once("data", () => resolve({ call, outcome: "open" }));
        call.on("error", (e: grpc.ServiceError) => resolve({ call, outcome: `${grpc.status[e.code]}: ${e.details}` }));
      });
    const idle = rssOf(w.proc.pid);
    const held = await Promise.all(Array.from({ length: 100 }, open));
    cleanups.push(() => held.forEach((h) => h.call.cancel()));
    expect(held.every((h) => h.outcome === "open")).toBe(true);
    const refused = await open();
    expect(refused.outcome).toStartWith("RESOURCE_EXHAUSTED: at most 100 WatchTasks streams may be open on this Worker at once (WORKER_MAX_WATCH_STREAMS)");
    // 2,000 more, refused as they come, leave nothing behind.
    for (let i = 0; i < 20; i++) expect(new Set((await Promise.all(Array.from({ length: 100 }, open))).map((r) => r.outcome.split(":")[0]))).toEqual(new Set(["RESOURCE_EXHAUSTED"]));
    const after = rssOf(w.proc.pid);
    console.log(`worker VmRSS: idle ${(idle / MiB).toFixed(0)} MiB, with 100 streams and 2,000 refused ${(after / MiB).toFixed(0)} MiB`);
    expect(after - idle).toBeLessThan(WATCH_RSS_GROWTH_BOUND);
    // Ten closed: ten places (the close reaches the Worker a moment later: asked again until it has).
    for (const h of held.splice(0, 10)) h.call.cancel();
    let reopened = 0;
    while (reopened < 10) {
      const r = await open();
      if (r.outcome === "open") {
        held.push(r);
        reopened++;
      } else expect(r.outcome).toStartWith("RESOURCE_EXHAUSTED");
    }
    expect((await open()).outcome).toStartWith("RESOURCE_EXHAUSTED");
  }, 120_000);

  /**
   * Growth allowed while a task names 3,000 synthetic chains, one block each (IO_CACHE_MAX_BYTES=0:
   * the read cache, bounded on its own, would otherwise fill with their blocks). Measured
   * (2026-12-06): +283 MiB keeping 64 chains (garbage of 3,000 generated blocks the collectors free
   * in their own time), +661 MiB keeping every chain.
   */
  const CHAIN_RSS_GROWTH_BOUND = 448 * MiB;

  test("a function naming 3,000 synthetic chains: the Worker keeps the 64 used last, RSS stays bounded, and a chain asked again gives the same block", async () => {
    const { client, process: w } = await startWorker({ EXECUTOR_COUNT: "2", IO_CACHE_MAX_BYTES: "0" }, cleanups);
    const source = 'def main(ctx, name):\n    b = ctx.blockdb.block(992, full=False, chain=name)\n    return b["hash"]\n';
    const run = async (id: string, names: string[]): Promise<string[]> => {
      const r = await client.submitTask(inputsTask(id, source, names), "", { waitMs: 10_000 });
      if (!r.ok) throw new Error(r.details);
      await client.watch([id], false, true);
      const res = await client.getTaskResult(id);
      if (!res.ok) throw new Error(res.details);
      expect(res.value.snapshot!.state).toBe(TaskState.SUCCEEDED);
      return res.value.returnValues.map((b) => JSON.parse(b.toString()) as string);
    };
    const [first] = await run("chains-warm", ["chain-0"]);
    const idle = rssOf(w.proc.pid);
    const names = Array.from({ length: 3000 }, (_, i) => `chain-${i}`);
    const hashes = await run("chains-many", names);
    expect(new Set(hashes).size).toBe(3000);
    const after = rssOf(w.proc.pid);
    console.log(`worker VmRSS: idle ${(idle / MiB).toFixed(0)} MiB, after 3,000 chains ${(after / MiB).toFixed(0)} MiB (bound: idle + ${CHAIN_RSS_GROWTH_BOUND / MiB} MiB)`);
    expect(after - idle).toBeLessThan(CHAIN_RSS_GROWTH_BOUND);
    // chain-0 was dropped long ago: asked again, the same block.
    expect(await run("chains-again", ["chain-0"])).toEqual([first!]);
  }, 180_000);
});
