import { readFileSync } from "node:fs";

/**
 * HostMetrics samples what a Worker's heartbeat reports about its machine: CPU busy fraction
 * since the previous sample (from /proc/stat), memory in use (1 - MemAvailable/MemTotal from
 * /proc/meminfo) and this process's RSS. Fractions are 0..1, matching the Coordinator's red
 * lines.
 */
export class HostMetrics {
  private lastCpu: { busy: number; total: number } | null = null;

  sample(): { cpuPercent: number; memoryPercent: number; memoryAvailableBytes: number; memoryTotalBytes: number; processRssBytes: number } {
    const mem = readMeminfo();
    return {
      cpuPercent: this.cpuBusyFraction(),
      memoryPercent: mem.totalBytes > 0 ? clamp01(1 - mem.availableBytes / mem.totalBytes) : 0,
      memoryAvailableBytes: mem.availableBytes,
      memoryTotalBytes: mem.totalBytes,
      processRssBytes: process.memoryUsage.rss(),
    };
  }

  private cpuBusyFraction(): number {
    const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!;
    const fields = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
    const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
    const now = { busy: total - idle, total };
    const prev = this.lastCpu;
    this.lastCpu = now;
    if (!prev || now.total <= prev.total) return 0;
    return clamp01((now.busy - prev.busy) / (now.total - prev.total));
  }
}

function readMeminfo(): { totalBytes: number; availableBytes: number } {
  const text = readFileSync("/proc/meminfo", "utf8");
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0) * 1024;
  return { totalBytes: kb("MemTotal"), availableBytes: kb("MemAvailable") };
}

function clamp01(x: number): number {
  return Math.min(1, Math.max(0, x));
}
