import type { EtcdTls } from "../etcd/etcd-access";
import { etcdFetch } from "../etcd/etcd-http";
import { phaseDelayMs } from "./clock-monitor-core";
import { ClockOffsetCore, type ClockReading, type ClockSample } from "./clock-offset-core";

export interface EtcdClockOptions {
  /** One exchange's timeout. */
  readonly timeoutMs: number;
  /** CLOCK_TEST_OFFSET_MS: added to every local reading (a skewed clock for tests). */
  readonly testOffsetMs: number;
  /** ETCD_TLS_*: etcd over TLS (with the client certificate), else plain HTTP. */
  readonly tls: EtcdTls | null;
}

/**
 * sampleEtcdClock asks etcd for `/version` over HTTP (served on the client port, beside gRPC) and
 * reads its `Date` header: whole seconds of etcd's clock, bracketed by our send and receive times.
 * etcd's gRPC replies carry no time; the Date header is what every etcd answers with.
 */
export async function sampleEtcdClock(endpoint: string, opts: EtcdClockOptions): Promise<ClockSample> {
  const sentMs = Date.now() + opts.testOffsetMs;
  const res = await etcdFetch(endpoint, "/version", opts.tls, opts.timeoutMs);
  const receivedMs = Date.now() + opts.testOffsetMs;
  await res.arrayBuffer();
  const date = res.headers.get("date");
  const referenceSecondMs = date === null ? NaN : Date.parse(date);
  if (!res.ok || !Number.isFinite(referenceSecondMs)) throw new Error(`etcd ${endpoint} answered /version with HTTP ${res.status} and Date ${JSON.stringify(date)}`);
  return { sentMs, receivedMs, referenceSecondMs };
}


/**
 * measureEtcdClockOffset takes `samples` exchanges with one etcd endpoint, 200-400 ms apart at
 * spread phases, and returns the core's last decision (about ±100 ms plus the round trip after
 * five). Throws when no exchange succeeded.
 */
export async function measureEtcdClockOffset(
  endpoint: string,
  opts: EtcdClockOptions & { readonly samples: number; readonly maxOffsetMs: number },
): Promise<ClockReading> {
  const core = new ClockOffsetCore({ maxOffsetMs: opts.maxOffsetMs, window: opts.samples });
  let decision: ClockReading | null = null;
  let lastError = "";
  for (let i = 0; i < opts.samples; i++) {
    if (i > 0) await Bun.sleep(200 + phaseDelayMs(i) / 5);
    try {
      decision = core.handle({ type: "sampled", sample: await sampleEtcdClock(endpoint, opts) }).reply;
    } catch (e) {
      lastError = (e as Error).message;
    }
  }
  if (!decision) throw new Error(lastError);
  return decision;
}
