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
