/// <reference lib="webworker" />
import { setPriority } from "node:os";
import { answerSteps, GeneratorTurns, SyntheticChains } from "./synthetic-chain-jobs";
import type { SyntheticThreadMessage, SyntheticThreadReply } from "./synthetic-chain-thread-protocol";

// The synthetic chain's thread: generates blocks, receipts and logs off the main thread of the
// process that asked (LocalTestChain). Requests take turns, one step (at most one block) each
// (GeneratorTurns), so a request for one block is never queued behind a whole eth_getLogs range.
declare const self: Worker;

// Generation is bulk work: on a busy host it yields the CPU to the process's main thread (gRPC,
// heartbeats, executor pings) and its executors. Linux keeps nice per thread, and setPriority()
// without a pid sets the calling thread's; raising it needs no privilege.
const GENERATOR_NICE = 10;
try {
  setPriority(GENERATOR_NICE);
} catch {
  // A host that refuses (none known) keeps the default priority.
}

interface Job {
  readonly id: number;
  readonly steps: Generator<void, string>;
}

let chains: SyntheticChains | undefined;
const turns = new GeneratorTurns<Job>();
let scheduled = false;
const encoder = new TextEncoder();

function reply(r: SyntheticThreadReply): void {
  if (r.ok) self.postMessage(r, [r.bytes.buffer as ArrayBuffer]);
  else self.postMessage(r);
}

/** takeTurn runs one step of the job whose turn it is; a job not done waits for its next turn. */
function takeTurn(): void {
  scheduled = false;
  const job = turns.next();
  if (job === undefined) return;
  try {
    const step = job.steps.next();
    if (step.done) reply({ id: job.id, ok: true, bytes: encoder.encode(step.value) });
    else turns.stepped(job);
  } catch (e) {
    reply({ id: job.id, ok: false, message: (e as Error)?.message ?? String(e) });
  }
  schedule();
}

// setImmediate runs after the messages that arrived meanwhile: a new request joins the turns
// before the next step.
function schedule(): void {
  if (scheduled || turns.size === 0) return;
  scheduled = true;
  setImmediate(takeTurn);
}

self.onmessage = (ev: MessageEvent<SyntheticThreadMessage>) => {
  const m = ev.data;
  if (m.kind === "init") {
    chains = new SyntheticChains(m.head);
    return;
  }
  if (chains === undefined) return reply({ id: m.id, ok: false, message: "the synthetic chain's thread got a request before its head" });
  turns.add({ id: m.id, steps: answerSteps(chains, m.request) });
  schedule();
};
