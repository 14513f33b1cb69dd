import { readdirSync, readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** The pid and every descendant, from /proc/<pid>/task/<tid>/children. */
export function processTree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${out[i]}/task`);
    } catch {
      continue;
    }
    for (const t of tasks) {
      try {
        for (const c of readFileSync(`/proc/${out[i]}/task/${t}/children`, "utf8").trim().split(/\s+/)) if (c) out.push(Number(c));
      } catch {
        // the thread or process is gone
      }
    }
  }
  return out;
}

/** CPU seconds (user + system) used so far by one process; 0 if it is gone. */
export function processCpuSeconds(pid: number): { user: number; system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name, which may hold spaces: utime and stime are fields 14 and 15.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { user: Number(f[11]) / TICKS_PER_SECOND, system: Number(f[12]) / TICKS_PER_SECOND };
  } catch {
    return { user: 0, system: 0 };
  }
}

/** CPU seconds of a process and, separately, of all its descendants (children that died are lost). */
export function treeCpuSeconds(pid: number): { self: number; children: number } {
  let self = 0;
  let children = 0;
  for (const p of processTree(pid)) {
    const c = processCpuSeconds(p);
    if (p === pid) self += c.user + c.system;
    else children += c.user + c.system;
  }
  return { self, children };
}
