import type { EtcdTls } from "../etcd/etcd-access";
import type { Logger } from "../logging/logger";
import type { MetricsRegistry } from "../metrics/metrics";
import { CoreDriver } from "../core/core-driver";
import { ClockMonitorCore, type ClockMonitorEvent, type ClockMonitorInstruction } from "./clock-monitor-core";
import { sampleEtcdClock } from "./etcd-clock";

export interface ClockMonitorOptions {
  readonly etcdEndpoints: readonly string[];
  readonly etcdTls: EtcdTls | null;
  readonly maxOffsetMs: number;
  readonly testOffsetMs: number;
  /** Samples taken at start, a phase step apart. */
  readonly startSamples: number;
  /** A heartbeat cycle takes no sample within this long of the last one (bounds etcd's load). */
  readonly minSpacingMs: number;
}

/**
 * ClockMonitor measures this host's clock against etcd's for a long-running role: ClockMonitorCore
 * decides when (a burst at start, then at most one sample per heartbeat cycle and `minSpacingMs`,
 * at a rotating phase) and what the readings mean; this adapter takes the samples, exports the
 * estimate through `report` (the blockx_clock_offset_seconds gauge) and writes the log lines.
 */
export class ClockMonitor {
  private readonly driver: CoreDriver<ClockMonitorEvent, ClockMonitorInstruction>;
  private stopped = false;

  constructor(
    private readonly opts: ClockMonitorOptions,
    private readonly report: (offsetSeconds: number) => void,
    private readonly log: Logger,
  ) {
    const core = new ClockMonitorCore({ maxOffsetMs: opts.maxOffsetMs, startSamples: opts.startSamples, minSpacingMs: opts.minSpacingMs, window: 8 });
    this.driver = new CoreDriver(core, { name: "clock", carryOut: (i) => this.carryOut(i), nowMs: () => Date.now(), timeAdvanced: { type: "timeAdvanced" }, log });
  }

  /** start takes the start-up burst in the background (the role does not wait for it). */
  start(): void {
    this.driver.send({ type: "started" });
  }

  /** onHeartbeatCycle: the heartbeat publisher's hook; the core takes a sample unless one is recent or running. */
  onHeartbeatCycle(): void {
    if (!this.stopped) this.driver.send({ type: "heartbeatCycle" });
  }

  stop(): void {
    this.stopped = true;
    this.driver.stop();
  }

  private carryOut(i: ClockMonitorInstruction): void {
    switch (i.type) {
      case "takeSample":
        void this.sample(i.k);
        return;
      case "reportOffset":
        this.report(i.offsetSeconds);
        return;
      case "logSkewed":
      case "logRecovered": {
        const est = i.estimate;
        const fields = { component: "clock", offsetMs: Math.round(est.offsetMs), uncertaintyMs: Math.round(est.uncertaintyMs), maxOffsetMs: this.opts.maxOffsetMs };
        if (i.type === "logSkewed") {
          this.log.error(fields, `this host's clock is ${Math.round(est.offsetMs)} ms off etcd's (tolerance ±${this.opts.maxOffsetMs} ms): Coordinators may count this Worker's heartbeats stale; sync the clock (chrony/systemd-timesyncd)`);
        } else this.log.info(fields, "this host's clock is back within tolerance of etcd's");
        return;
      }
    }
  }

  private async sample(k: number): Promise<void> {
    const endpoint = this.opts.etcdEndpoints[k % this.opts.etcdEndpoints.length]!;
    let event: ClockMonitorEvent;
    try {
      event = { type: "sampled", sample: await sampleEtcdClock(endpoint, { timeoutMs: 2_000, testOffsetMs: this.opts.testOffsetMs, tls: this.opts.etcdTls }) };
    } catch (e) {
      event = { type: "sampleFailed", reason: (e as Error).message };
    }
    if (!this.stopped) this.driver.post(event);
  }
}

/**
 * startClockMonitor starts a ClockMonitor for a role that heartbeats to etcd and exports its
 * estimate as `blockx_clock_offset_seconds` (this host's clock minus etcd's). The caller feeds
 * `onHeartbeatCycle` from its heartbeat loop and calls `stop` at shutdown.
 */
export function startClockMonitor(
  registry: MetricsRegistry,
  opts: { readonly etcdEndpoints: readonly string[]; readonly etcdTls: EtcdTls | null; readonly maxOffsetMs: number; readonly testOffsetMs: number },
  log: Logger,
): ClockMonitor {
  const gauge = registry.gauge("blockx_clock_offset_seconds", "This host's clock minus etcd's (from etcd's HTTP Date header), as last estimated.");
  const monitor = new ClockMonitor({ ...opts, startSamples: 5, minSpacingMs: 1_000 }, (s) => gauge.set({}, s), log.child({ component: "clock" }));
  monitor.start();
  return monitor;
}
