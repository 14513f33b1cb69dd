import { existsSync, readdirSync, readFileSync } from "node:fs";

/** /proc entries one scan reads at most: the fallback stays bounded on a host with very many processes. */
export const MAX_PROC_SCAN = 65_536;
/** One scan serves every lookup for this long (the pool asks for each executor at every 50 ms tick). */
const SCAN_TTL_MS = 40;

/**
 * ProcChildren finds the direct children of a process, for the pool's memory check and the
 * interpreter's pid. /proc/<pid>/task/<pid>/children is the cheap way, but it exists only in
 * kernels built with CONFIG_PROC_CHILDREN; where it is absent, the children are found by their
 * parent pid in /proc/<each>/stat, at most MAX_PROC_SCAN entries, one scan shared by the lookups of
 * SCAN_TTL_MS.
 */
export class ProcChildren {
  private readonly viaChildrenFile: boolean;
  private scan: { atMs: number; byParent: Map<number, number[]> } | null = null;

  constructor(opts: { readonly forceScan?: boolean; readonly nowMs?: () => number } = {}) {
    this.viaChildrenFile = !opts.forceScan && existsSync(`/proc/${process.pid}/task/${process.pid}/children`);
    this.nowMs = opts.nowMs ?? (() => performance.now());
  }

  private readonly nowMs: () => number;

  /** childrenOf: the direct children of `pid` (empty when it has none or is gone). */
  childrenOf(pid: number): number[] {
    if (this.viaChildrenFile) {
      try {
        const text = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
        return text ? text.split(" ").map(Number) : [];
      } catch {
        return [];
      }
    }
    return this.byParent().get(pid) ?? [];
  }

  private byParent(): Map<number, number[]> {
    const now = this.nowMs();
    if (this.scan && now - this.scan.atMs < SCAN_TTL_MS) return this.scan.byParent;
    const byParent = new Map<number, number[]>();
    let entries: string[];
    try {
      entries = readdirSync("/proc");
    } catch {
      entries = [];
    }
    let read = 0;
    for (const e of entries) {
      if (read >= MAX_PROC_SCAN) break;
      if (!/^\d+$/.test(e)) continue;
      read++;
      const ppid = parentOf(e);
      if (ppid === null) continue;
      const list = byParent.get(ppid);
      if (list) list.push(Number(e));
      else byParent.set(ppid, [Number(e)]);
    }
    this.scan = { atMs: now, byParent };
    return byParent;
  }
}

/** parentOf: the ppid in /proc/<pid>/stat (the 4th field, after the command name, which may hold spaces and parentheses). */
function parentOf(pid: string): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    return Number.isInteger(ppid) ? ppid : null;
  } catch {
    return null; // gone meanwhile
  }
}

/** The one the pool uses: probed once for CONFIG_PROC_CHILDREN. */
export const procChildren = new ProcChildren();
