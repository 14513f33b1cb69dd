import { cpuSeconds, descendants } from "../../test/support/proc-scan";

/**
 * CpuSampler follows the CPU of a Worker and of every process below it (its executors) over a
 * task: per process, the last value seen less the value at the start. An executor recycled or
 * killed meanwhile counts up to its last sample (its CPU is gone from /proc once it exits).
 */
export class CpuSampler {
  private readonly start = new Map<number, number>();
  private readonly last = new Map<number, number>();
  private readonly workerStart: number;
  workerNow: number;

  constructor(private readonly pid: number) {
    this.workerStart = this.workerNow = cpuSeconds(pid);
    for (const d of descendants(pid)) this.start.set(d, cpuSeconds(d));
  }

  sample(): void {
    this.workerNow = cpuSeconds(this.pid);
    for (const d of descendants(this.pid)) {
      const c = cpuSeconds(d);
      if (c > 0) this.last.set(d, c);
    }
  }

  get worker(): number {
    return this.workerNow - this.workerStart;
  }

  get executors(): number {
    let total = 0;
    for (const [pid, c] of this.last) total += Math.max(0, c - (this.start.get(pid) ?? 0));
    return total;
  }
}
