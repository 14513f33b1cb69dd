import { interleavedRounds, median } from "./rounds";

/** Measurement loops shared by the benchmarks. A call gets a sequence number it may use as an id. */
export type BenchCall = (seq: number) => Promise<unknown>;

/** latency runs `warmup` calls, then `n` calls one at a time, and returns p50/p99 in µs. */
export async function latency(call: BenchCall, n: number, warmup = 200): Promise<{ p50: number; p99: number }> {
  let seq = 0;
  for (let i = 0; i < warmup; i++) await call(seq++);
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await call(seq++);
    samples.push((performance.now() - t) * 1000);
  }
  samples.sort((a, b) => a - b);
  return { p50: samples[Math.floor(n * 0.5)]!, p99: samples[Math.floor(n * 0.99)]! };
}

/** throughput keeps `inflight` calls going for `seconds` and returns calls per second. */
export async function throughput(call: BenchCall, inflight: number, seconds: number): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let done = 0;
  let seq = 0;
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (performance.now() < end) {
        await call(seq++);
        done++;
      }
    }),
  );
  return done / seconds;
}

/** SeriesFigures: the latency (µs) and throughput of one series of calls, medians over interleaved rounds. */
export interface SeriesFigures {
  readonly p50: number;
  readonly p99: number;
  readonly perSecond: number;
}

export interface SeriesOptions {
  /** Calls measured one at a time per series, over all rounds. */
  readonly calls: number;
  /** Calls in flight for throughput. */
  readonly inflight: number;
  /** Seconds of throughput per series, over all rounds. */
  readonly seconds: number;
  readonly rounds: number;
  /** Untimed calls before each round's latency, per series. */
  readonly warmup?: number;
}

/**
 * measureSeries measures every series in interleaved rounds (bench/support/rounds.ts): per round,
 * each series' latency (calls/rounds, one at a time), then each series' throughput (seconds/rounds
 * at `inflight`), the order rotated every round; it returns the medians of the rounds' p50, p99
 * and calls/s. Noise that hits one round hits every series alike and the median drops it.
 */
export async function measureSeries<K extends string>(series: Record<K, BenchCall>, opts: SeriesOptions): Promise<Record<K, SeriesFigures>> {
  const keys = Object.keys(series) as K[];
  const lat = await interleavedRounds(keys, opts.rounds, (k) => latency(series[k], Math.ceil(opts.calls / opts.rounds), opts.warmup ?? 200));
  const tput = await interleavedRounds(keys, opts.rounds, (k) => throughput(series[k], opts.inflight, opts.seconds / opts.rounds));
  const out = {} as Record<K, SeriesFigures>;
  for (const k of keys) out[k] = { p50: median(lat[k].map((l) => l.p50)), p99: median(lat[k].map((l) => l.p99)), perSecond: median(tput[k]) };
  return out;
}

/** untilOk retries `call` every 50 ms until it succeeds (a server still starting), at most `tries` times. */
export async function untilOk(call: BenchCall, tries = 100): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      await call(-1 - i);
      return;
    } catch (e) {
      if (i >= tries) throw e;
      await Bun.sleep(50);
    }
  }
}
