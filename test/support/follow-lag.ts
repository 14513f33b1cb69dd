import type { FollowLedger } from "../../src/follow/adapters/follow-ledger";
import { percentile } from "../soak/lag-stats";
import type { AnvilNode } from "./anvil";
import type { LogLine } from "./blockx-process";

/**
 * canonicalLag: how far a followed table is behind anvil: the node's head minus the highest block
 * the table's scope ledger holds that is still canonical, looking back `depth` + 2 blocks (a block
 * orphaned and not yet rewound counts as behind).
 */
export async function canonicalLag(anvil: AnvilNode, ledger: FollowLedger, depth: number): Promise<number> {
  const head = await anvil.head();
  const tail = await ledger.tail(depth + 2);
  for (let i = tail.length - 1; i >= 0; i--) {
    const b = tail[i]!;
    if (b.hash !== null && b.hash === (await anvil.hashAt(b.number))) return Math.max(0, head - b.number);
  }
  return Math.max(0, head - ((tail[0]?.number ?? 1) - 1));
}

/** StepTimes: the follower's steps (readHeaders, task, task and ledger read, rewind): how many, p50 and p99 in ms. */
export type StepTimes = Record<string, { readonly n: number; readonly p50: number; readonly p99: number }>;

/**
 * followerStepTimes: the step times in a follower's debug lines (`follower step done`, `task run`)
 * logged within [fromWallMs, toWallMs), by step: "task" is the task alone, "task and ledger read"
 * the task with the read of the scope ledger after it.
 */
export function followerStepTimes(lines: readonly LogLine[], fromWallMs = 0, toWallMs = Number.POSITIVE_INFINITY): StepTimes {
  const by: Record<string, number[]> = {};
  for (const l of lines) {
    const t = Number(l.time);
    if (typeof l.ms !== "number" || typeof l.step !== "string" || !(t >= fromWallMs && t < toWallMs)) continue;
    (by[l.step === "runTask" ? "task" : l.step === "writeRange" ? "task and ledger read" : l.step] ??= []).push(l.ms);
  }
  return Object.fromEntries(Object.entries(by).map(([k, v]) => [k, { n: v.length, p50: percentile(v, 0.5), p99: percentile(v, 0.99) }]));
}
