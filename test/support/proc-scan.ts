import { readdirSync, readFileSync } from "node:fs";

/** processesMentioning lists `pid: command line` of every process but this one whose command line contains `text`. */
export function processesMentioning(text: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${e}/cmdline`, "utf8").replace(/\0/g, " ");
      if (cmd.includes(text)) out.push(`${e}: ${cmd}`);
    } catch {
      // The process ended while we looked.
    }
  }
  return out;
}

/** tasksOf: the thread ids of a process, from /proc (none once it has exited). */
function tasksOf(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
}

/** childPids: the direct children of a process (for a Worker, its Python executors), from /proc. */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const t of tasksOf(pid)) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${t}/children`, "utf8").trim().split(/\s+/)) if (c) out.push(Number(c));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** descendants: every process below `pid` now (children, their executors, ...). */
export function descendants(pid: number): number[] {
  const out = childPids(pid);
  for (let i = 0; i < out.length; i++) out.push(...childPids(out[i]!));
  return out;
}

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** statCpuSeconds: utime + stime of a /proc stat line (a process's or a thread's), in seconds. */
function statCpuSeconds(stat: string): number {
  // Fields after the command name, which may hold spaces: utime and stime are fields 14 and 15.
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / TICKS_PER_SECOND;
}

/** cpuSeconds: user + system CPU seconds used so far by one process; 0 once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    return statCpuSeconds(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return 0;
  }
}

/** threadCpuSeconds: each live thread of a process, by id: its name and CPU seconds so far. */
export function threadCpuSeconds(pid: number): Map<number, { name: string; cpu: number }> {
  const out = new Map<number, { name: string; cpu: number }>();
  for (const t of tasksOf(pid)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, "utf8");
      out.set(Number(t), { name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")), cpu: statCpuSeconds(stat) });
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** treeCpuSeconds: CPU seconds of a process and, separately, of its live descendants. */
export function treeCpuSeconds(pid: number): { self: number; children: number } {
  return { self: cpuSeconds(pid), children: descendants(pid).reduce((a, d) => a + cpuSeconds(d), 0) };
}
