import type { EtcdTls } from "../etcd/etcd-access";
import type { Logger } from "../logging/logger";
import type { MetricsRegistry } from "../metrics/metrics";
import { ClockOffsetCore, type ClockDecision } from "./clock-offset-core";
import { phaseDelayMs, sampleEtcdClock } from "./etcd-clock";

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
 * ClockMonitor measures this host's clock against etcd's for a long-running role: a burst of
 * samples at start, then one per heartbeat cycle (at most one per `minSpacingMs`, at a rotating
 * phase). It feeds ClockOffsetCore, exports the estimate through `report` (the
 * blockx_clock_offset_seconds gauge), logs an error when the clock becomes skewed and info when it
 * recovers. It never stops the role: a skewed Worker still serves, loudly.
 */
export class ClockMonitor {
  private readonly core: ClockOffsetCore;
  private k = 0;
  private inFlight = false;
  private lastSampleMs = -Infinity;
  private stopped = false;
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();

  constructor(
    private readonly opts: ClockMonitorOptions,
    private readonly report: (offsetSeconds: number) => void,
    private readonly log: Logger,
  ) {
    this.core = new ClockOffsetCore({ maxOffsetMs: opts.maxOffsetMs, window: 8 });
  }

  /** start takes the start-up burst in the background (the role does not wait for it). */
  start(): void {
    const next = (left: number) => {
      if (left <= 0 || this.stopped) return;
      void this.sample().then(() => {
        this.after(200 + phaseDelayMs(this.k) / 5, () => next(left - 1));
      });
    };
    next(this.opts.startSamples);
  }

  /** onHeartbeatCycle: the heartbeat publisher's hook; takes a sample unless one is recent or running. */
  onHeartbeatCycle(): void {
    if (this.stopped || this.inFlight || Date.now() - this.lastSampleMs < this.opts.minSpacingMs) return;
    this.inFlight = true;
    this.after(phaseDelayMs(this.k), () => void this.sample());
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private after(ms: number, fn: () => void): void {
    if (this.stopped) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.stopped) fn();
    }, ms);
    this.timers.add(t);
  }

  private async sample(): Promise<void> {
    this.inFlight = true;
    this.k++;
    const endpoint = this.opts.etcdEndpoints[this.k % this.opts.etcdEndpoints.length]!;
    let decision: ClockDecision;
    try {
      const sample = await sampleEtcdClock(endpoint, { timeoutMs: 2_000, testOffsetMs: this.opts.testOffsetMs, tls: this.opts.etcdTls });
      decision = this.core.handle({ type: "sampled", sample });
    } catch (e) {
      decision = this.core.handle({ type: "sampleFailed", reason: (e as Error).message });
    } finally {
      this.inFlight = false;
      this.lastSampleMs = Date.now();
    }
    const est = decision.estimate;
    if (est) this.report(est.offsetMs / 1000);
    if (decision.transition && est) {
      const fields = { component: "clock", offsetMs: Math.round(est.offsetMs), uncertaintyMs: Math.round(est.uncertaintyMs), maxOffsetMs: this.opts.maxOffsetMs };
      if (decision.state === "SKEWED") {
        this.log.error(fields, `this host's clock is ${Math.round(est.offsetMs)} ms off etcd's (tolerance ±${this.opts.maxOffsetMs} ms): Coordinators may count this Worker's heartbeats stale; sync the clock (chrony/systemd-timesyncd)`);
      } else if (decision.transition.from === "SKEWED") {
        this.log.info(fields, "this host's clock is back within tolerance of etcd's");
      }
    }
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
