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
