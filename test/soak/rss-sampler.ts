import { readFileSync } from "node:fs";

/** memoryOf reads a process's resident set now and at its peak (VmRSS, VmHWM) in KiB; undefined once it is gone. */
export function memoryOf(pid: number): { rssKb: number; hwmKb: number } | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return undefined;
  }
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
  return { rssKb: kb("VmRSS"), hwmKb: kb("VmHWM") };
}

/**
 * RssSampler polls /proc every second for named groups of processes (a Worker, its
 * executors, etcd...) and keeps each group's peak: the largest VmHWM of any one process of the
 * group, over all its incarnations. A process's own VmHWM covers the moments between samples.
 */
export class RssSampler {
  readonly peakKb = new Map<string, number>();
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly groups: () => ReadonlyArray<{ name: string; pids: readonly number[] }>) {}

  start(periodMs = 1_000): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), periodMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.sample();
  }

  sample(): void {
    for (const g of this.groups()) {
      for (const pid of g.pids) {
        const m = memoryOf(pid);
        if (m) this.peakKb.set(g.name, Math.max(this.peakKb.get(g.name) ?? 0, m.hwmKb, m.rssKb));
      }
    }
  }
}
