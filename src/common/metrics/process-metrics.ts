import { buildInfo } from "../build-info";
import type { MetricsRegistry } from "./metrics";

/** registerProcessMetrics adds blockx_build_info and the standard process_* series. */
export function registerProcessMetrics(registry: MetricsRegistry, role: string): void {
  registry
    .gauge("blockx_build_info", "Build of this process; always 1.", ["version", "commit", "bun_version", "role"])
    .set({ version: buildInfo.version, commit: buildInfo.commit, bun_version: buildInfo.bunVersion, role }, 1);
  const startSeconds = Math.round(Date.now() / 1000 - process.uptime());
  registry.gauge("process_start_time_seconds", "Start time of the process since the Unix epoch.").set({}, startSeconds);
  const rss = registry.gauge("process_resident_memory_bytes", "Resident memory size in bytes.");
  rss.onCollect(() => rss.set({}, process.memoryUsage.rss()));
  // A counter: rate() over it is the CPU in use, which a gauge would not promise.
  const cpu = registry.counter("process_cpu_seconds_total", "User and system CPU time spent in seconds.");
  cpu.onCollect(() => {
    const u = process.cpuUsage();
    cpu.setTotal({}, (u.user + u.system) / 1e6);
  });
}
