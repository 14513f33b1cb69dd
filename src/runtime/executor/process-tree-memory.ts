import { readFileSync } from "node:fs";
import { procChildren } from "./proc-children";

const PAGE_SIZE = 4096;

/** How many processes of a tree one read counts at most (a fork bomb's are bounded by RLIMIT_NPROC anyway). */
export const MAX_TREE_PROCESSES = 64;
/** How often ProcessTreeMemory looks for new processes in the tree at most. */
export const TREE_WALK_INTERVAL_MS = 1_000;

/** Where ProcessTreeMemory reads /proc (replaced in its tests to count the reads). */
export interface ProcReaders {
  readonly childrenOf: (pid: number) => number[];
  /** A process's resident bytes, or null when it is gone. */
  readonly rssBytesOf: (pid: number) => number | null;
}

/** statmRssBytes: a process's resident memory from /proc/<pid>/statm, or null when it is gone. */
export function statmRssBytes(pid: number): number | null {
  try {
    return Number(readFileSync(`/proc/${pid}/statm`, "utf8").split(" ")[1]) * PAGE_SIZE;
  } catch {
    return null;
  }
}

const PROC: ProcReaders = { childrenOf: (pid) => procChildren.childrenOf(pid), rssBytesOf: statmRssBytes };

/**
 * ProcessTreeMemory is the resident memory of a process and everything under it, from /proc. It
 * walks the tree (each process's children looked up) at most every TREE_WALK_INTERVAL_MS, and
 * again at once when a process of the last walk is gone; in between it reads only the memory of
 * the processes that walk found. The executor pool asks at every 50 ms tick for every executor,
 * and walking each time was 7% of the Worker's CPU in bench/io/io-bound.ts with 2 executors (a
 * sandboxed executor is three processes: bwrap, its init, the interpreter). A process forked in
 * between counts from the next walk on, at most TREE_WALK_INTERVAL_MS late: user functions cannot
 * fork (seccomp and the executor's audit hook deny it), so this is a late count only for what the
 * memory limit is a backstop against.
 */
export class ProcessTreeMemory {
  private tree: { readonly pids: readonly number[]; readonly walkedAtMs: number } | null = null;

  constructor(
    private readonly rootPid: number,
    private readonly proc: ProcReaders = PROC,
  ) {}

  /** rssBytes: the tree's resident bytes, or null when the root process is gone. */
  rssBytes(nowMs: number): number | null {
    const tree = this.tree;
    if (tree === null || nowMs - tree.walkedAtMs >= TREE_WALK_INTERVAL_MS) return this.walk(nowMs);
    let total = 0;
    for (const pid of tree.pids) {
      const rss = this.proc.rssBytesOf(pid);
      if (rss === null) return this.walk(nowMs); // one of them is gone: the tree changed
      total += rss;
    }
    return total;
  }

  private walk(nowMs: number): number | null {
    let total = 0;
    const pids: number[] = [];
    const pending = [this.rootPid];
    while (pending.length > 0 && pids.length < MAX_TREE_PROCESSES) {
      const pid = pending.pop()!;
      const rss = this.proc.rssBytesOf(pid);
      if (rss === null) {
        if (pid !== this.rootPid) continue;
        this.tree = null;
        return null;
      }
      total += rss;
      pids.push(pid);
      pending.push(...this.proc.childrenOf(pid));
    }
    this.tree = { pids, walkedAtMs: nowMs };
    return total;
  }
}
