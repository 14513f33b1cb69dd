import { cpuSeconds, descendants, threadCpuSeconds } from "../../test/support/proc-scan";
import { median } from "./rounds";

/** What a Worker's threads do, by the names Bun and JavaScriptCore give them. */
export type ThreadGroup = "main" | "jit" | "gc" | "tableStore" | "other";
const THREAD_GROUPS: readonly ThreadGroup[] = ["main", "jit", "gc", "tableStore", "other"];

/** The columns of threadMedians, for a heading. */
export const THREAD_GROUP_COLUMNS = "main | JIT compilers | collector | table store thread | other";

/** threadsScaled: each group's CPU seconds times `scale` (1e6 / calls: µs per call). */
export function threadsScaled(threads: Record<ThreadGroup, number>, scale: number): Record<ThreadGroup, number> {
  return Object.fromEntries(THREAD_GROUPS.map((g) => [g, threads[g] * scale])) as Record<ThreadGroup, number>;
}

/** threadMedians: the groups' medians over runs, in THREAD_GROUP_COLUMNS order. */
export function threadMedians(runs: readonly Record<ThreadGroup, number>[], digits: number): string {
  return THREAD_GROUPS.map((g) => median(runs.map((r) => r[g])).toFixed(digits)).join(" | ");
}

function groupOf(pid: number, tid: number, name: string): ThreadGroup {
  if (tid === pid) return "main";
  if (name.startsWith("JIT") || name.startsWith("JSCWarmUp")) return "jit"; // JITWorker, JSCWarmUp: JavaScriptCore's compiler threads
  if (name.startsWith("Heap") || name.startsWith("mi-")) return "gc"; // HeapHelper: the collector; mi-scavenger: mimalloc
  if (name === "Worker") return "tableStore"; // the one Bun Worker thread a Worker runs: the SQLite table store's
  return "other";
}

/** threadCpu: CPU seconds of each live thread of `pid`, with its group. */
function threadCpu(pid: number): Map<number, { group: ThreadGroup; cpu: number }> {
  const out = new Map<number, { group: ThreadGroup; cpu: number }>();
  for (const [tid, t] of threadCpuSeconds(pid)) out.set(tid, { group: groupOf(pid, tid, t.name), cpu: t.cpu });
  return out;
}

/**
 * CpuSampler follows the CPU of a Worker and of every process below it (its executors) over a
 * task: per process, the last value seen less the value at the start. An executor recycled or
 * killed meanwhile counts up to its last sample (its CPU is gone from /proc once it exits).
 */
export class CpuSampler {
  private readonly start = new Map<number, number>();
  private readonly last = new Map<number, number>();
  private readonly workerStart: number;
  private readonly threadStart: Map<number, { group: ThreadGroup; cpu: number }>;
  private threadLast = new Map<number, { group: ThreadGroup; cpu: number }>();
  workerNow: number;

  constructor(private readonly pid: number) {
    this.workerStart = this.workerNow = cpuSeconds(pid);
    this.threadStart = threadCpu(pid);
    for (const d of descendants(pid)) this.start.set(d, cpuSeconds(d));
  }

  sample(): void {
    this.workerNow = cpuSeconds(this.pid);
    for (const [tid, t] of threadCpu(this.pid)) this.threadLast.set(tid, t);
    for (const d of descendants(this.pid)) {
      const c = cpuSeconds(d);
      if (c > 0) this.last.set(d, c);
    }
  }

  get worker(): number {
    return this.workerNow - this.workerStart;
  }

  /** The Worker's CPU seconds by thread group (threads that ended count up to their last sample). */
  get workerThreads(): Record<ThreadGroup, number> {
    const out: Record<ThreadGroup, number> = { main: 0, jit: 0, gc: 0, tableStore: 0, other: 0 };
    for (const [tid, t] of this.threadLast) out[t.group] += Math.max(0, t.cpu - (this.threadStart.get(tid)?.cpu ?? 0));
    return out;
  }

  get executors(): number {
    let total = 0;
    for (const [pid, c] of this.last) total += Math.max(0, c - (this.start.get(pid) ?? 0));
    return total;
  }
}
