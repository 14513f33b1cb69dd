/**
 * bench/worker/dispatcher-steps.ts: what DispatcherCore costs per tiny task while many tasks are
 * in flight (each task one call, running). Every task goes through the steps the Worker makes:
 * taskAdded, timeAdvanced (its call handed out), callFinished, taskRemoved, and the timeAdvanced
 * after. The baseline of the same run is the same with one task in flight: a step should not cost
 * more because other tasks are running.
 *
 *   bun bench/worker/dispatcher-steps.ts [--tasks 20000] [--inflight 1,256,2048] [--rounds 5]
 *
 * Pure core, no IO; medians of interleaved rounds.
 */
import { parseArgs } from "node:util";
import { DispatcherCore, type DispatchedCall } from "../../src/worker/core/dispatcher-core";
import { interleavedRounds, median } from "../support/rounds";

const { values } = parseArgs({
  options: {
    tasks: { type: "string", default: "20000" },
    inflight: { type: "string", default: "1,256,2048" },
    rounds: { type: "string", default: "5" },
  },
});
const TASKS = Number(values.tasks);
const SIZES = values.inflight.split(",").map(Number);

/** One round: `inflight` one-call tasks running; TASKS more pass through, one finishing as the next starts. µs per task. */
function round(inflight: number): number {
  const d = new DispatcherCore<number>({ taskMaxInflightCalls: 1024, maxInflightCalls: inflight * 2, maxAttempts: 3, retryBackoffBaseMs: 1, retryBackoffMaxMs: 1 });
  const oneCall = () => {
    let taken = false;
    return { next: () => (taken ? null : ((taken = true), { call: 1 })), total: 1 };
  };
  let id = 0;
  const running: DispatchedCall<number>[] = [];
  const start = () => {
    d.handle({ type: "taskAdded", taskId: `t${id++}`, source: oneCall() }, 0);
    for (const i of d.handle({ type: "timeAdvanced" }, 0).instructions) running.push(i.call);
  };
  for (let i = 0; i < inflight; i++) start();
  const t0 = performance.now();
  for (let k = 0; k < TASKS; k++) {
    const c = running.shift()!;
    d.handle({ type: "callFinished", call: c, result: { ok: true } }, 0);
    d.handle({ type: "taskRemoved", taskId: c.taskId }, 0);
    start();
    d.handle({ type: "timeAdvanced" }, 0);
  }
  return ((performance.now() - t0) * 1000) / TASKS;
}

const results = await interleavedRounds(SIZES.map(String), Number(values.rounds), async (n) => round(Number(n)));
const base = median(results[String(SIZES[0])]!);
console.log(`DispatcherCore: µs per one-call task (5 steps), ${TASKS} tasks per round, medians of ${values.rounds} interleaved rounds`);
console.log("");
console.log(`| tasks in flight | µs per task | vs ${SIZES[0]} in flight |`);
console.log("| ---: | ---: | ---: |");
for (const n of SIZES) {
  const m = median(results[String(n)]!);
  console.log(`| ${n} | ${m.toFixed(2)} | ${(m / base).toFixed(2)}x |`);
}
