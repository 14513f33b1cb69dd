import { describe, expect, test } from "bun:test";
import { AdmissionLimiter, type AdmissionConfig } from "./admission-limiter";

const CONFIG: AdmissionConfig = { initialLimit: 20, minLimit: 2, maxLimit: 100, queueSize: 10 };

/**
 * simulate drives a limiter with `clients` callers that each send a request again as soon as the
 * last one was answered (a rejected one retries 1 ms later), against a backend whose latency
 * at time t is latencyAt(t). Discrete events, no clock: returns the limit sampled after each
 * completion, with its time.
 */
function simulate(limiter: AdmissionLimiter<number>, clients: number, untilMs: number, latencyAt: (t: number) => number, failAt: (t: number) => boolean = () => false) {
  const events = new EventHeap();
  const start = (client: number, now: number) => events.push({ at: now + latencyAt(now), kind: "done", client, started: now });
  const trace: { t: number; limit: number; inflight: number }[] = [];
  for (let c = 0; c < clients; c++) events.push({ at: 0, kind: "send", client: c, started: 0 });
  for (let e = events.pop(); e && e.at <= untilMs; e = events.pop()) {
    if (e.kind === "send") {
      const d = limiter.acquire(e.client);
      if (d === "granted") start(e.client, e.at);
      else if (d === "rejected") events.push({ at: e.at + 10, kind: "send", client: e.client, started: 0 });
      continue;
    }
    for (const granted of limiter.release({ rttMs: e.at - e.started, overloaded: failAt(e.at) }, e.at)) start(granted, e.at);
    trace.push({ t: e.at, limit: limiter.limit, inflight: limiter.inflight });
    events.push({ at: e.at, kind: "send", client: e.client, started: 0 });
  }
  return trace;
}

interface SimEvent {
  at: number;
  kind: "done" | "send";
  client: number;
  started: number;
}

/** EventHeap: a binary min-heap by time, ties in insertion order. */
class EventHeap {
  private readonly items: (SimEvent & { seq: number })[] = [];
  private seq = 0;
  private less(a: number, b: number): boolean {
    const x = this.items[a]!;
    const y = this.items[b]!;
    return x.at < y.at || (x.at === y.at && x.seq < y.seq);
  }
  private swap(a: number, b: number): void {
    [this.items[a], this.items[b]] = [this.items[b]!, this.items[a]!];
  }
  push(e: SimEvent): void {
    this.items.push({ ...e, seq: this.seq++ });
    for (let i = this.items.length - 1; i > 0 && this.less(i, (i - 1) >> 1); i = (i - 1) >> 1) this.swap(i, (i - 1) >> 1);
  }
  pop(): SimEvent | undefined {
    if (this.items.length === 0) return undefined;
    const top = this.items[0]!;
    const last = this.items.pop()!;
    if (this.items.length > 0) {
      this.items[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < this.items.length && this.less(l, m)) m = l;
        if (r < this.items.length && this.less(r, m)) m = r;
        if (m === i) break;
        this.swap(i, m);
        i = m;
      }
    }
    return top;
  }
}

const minIn = (trace: { t: number; limit: number }[], from: number, to: number) => Math.min(...trace.filter((s) => s.t >= from && s.t < to).map((s) => s.limit));
const lastIn = (trace: { t: number; limit: number }[], to: number) => trace.filter((s) => s.t < to).at(-1)!.limit;

describe("AdmissionLimiter (Gradient2 + decrease on errors)", () => {
  test("a backend whose latency rises tenfold and falls back: the limit grows to the max, shrinks, then recovers", () => {
    const l = new AdmissionLimiter<number>(CONFIG);
    // 10 ms, then 100 ms from t=10 s to t=20 s, then 10 ms again.
    const trace = simulate(l, 300, 40_000, (t) => (t >= 10_000 && t < 20_000 ? 100 : 10));
    expect(lastIn(trace, 10_000)).toBe(100);
    expect(minIn(trace, 10_000, 20_000)).toBeLessThanOrEqual(10);
    expect(lastIn(trace, 40_000)).toBe(100);
    expect(Math.max(...trace.map((s) => s.inflight))).toBeLessThanOrEqual(100);
    expect(l.peakInflight).toBe(100);
  });

  test("a backend that queues past its capacity: the limit settles near the capacity instead of the max", () => {
    const l = new AdmissionLimiter<number>({ ...CONFIG, maxLimit: 1000, queueSize: 0 });
    // 10 ms up to 40 in flight; each request beyond adds queueing delay.
    const trace = simulate(l, 600, 30_000, () => 10 * Math.max(1, l.inflight / 40));
    const settled = trace.filter((s) => s.t > 20_000).map((s) => s.limit);
    expect(Math.max(...settled)).toBeLessThan(200);
    expect(Math.min(...settled)).toBeGreaterThanOrEqual(20);
  });

  test("transient errors cut the limit by 0.8 each, down to the minimum, and it grows back once they stop", () => {
    const l = new AdmissionLimiter<number>(CONFIG);
    const trace = simulate(l, 300, 30_000, () => 10, (t) => t >= 10_000 && t < 12_500);
    expect(lastIn(trace, 10_000)).toBe(100);
    expect(minIn(trace, 10_000, 12_500)).toBe(2);
    expect(lastIn(trace, 30_000)).toBe(100);
  });

  test("overload: past the limit requests queue (at most queueSize), the rest are rejected at once and counted", () => {
    const l = new AdmissionLimiter<string>({ initialLimit: 2, minLimit: 1, maxLimit: 2, queueSize: 2 });
    expect(["a", "b", "c", "d", "e", "f"].map((w) => l.acquire(w))).toEqual(["granted", "granted", "queued", "queued", "rejected", "rejected"]);
    expect({ inflight: l.inflight, queued: l.queued, rejected: l.rejected }).toEqual({ inflight: 2, queued: 2, rejected: 2 });
    // A freed slot goes to the oldest waiter.
    expect(l.release({ rttMs: 5, overloaded: false }, 0)).toEqual(["c"]);
    expect(l.release(null, 0)).toEqual(["d"]);
    expect(l.release(null, 0)).toEqual([]);
    expect(l.release(null, 0)).toEqual([]);
    expect(l.inflight).toBe(0);
    expect(() => l.release(null, 0)).toThrow("release without acquire");
  });

  test("while the backend is not the bottleneck (in flight < limit / 2) latency changes do not move the limit", () => {
    const l = new AdmissionLimiter<number>(CONFIG);
    simulate(l, 5, 5_000, (t) => (t < 2_500 ? 10 : 500));
    expect(l.limit).toBe(20);
  });

  test("bad configurations are refused", () => {
    expect(() => new AdmissionLimiter({ initialLimit: 1, minLimit: 2, maxLimit: 3, queueSize: 0 })).toThrow(RangeError);
    expect(() => new AdmissionLimiter({ initialLimit: 5, minLimit: 1, maxLimit: 3, queueSize: 0 })).toThrow(RangeError);
    expect(() => new AdmissionLimiter({ initialLimit: 1, minLimit: 0, maxLimit: 3, queueSize: 0 })).toThrow(RangeError);
  });
});
