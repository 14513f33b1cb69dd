/**
 * A small Prometheus registry: counters, gauges and histograms with labels, rendered in the
 * text exposition format. Our own instead of prom-client: a few dozen lines, no global state,
 * nothing that reads files or spawns threads inside the compiled binary.
 */

type Labels = Readonly<Record<string, string>>;

/** labelKey: a series' key among one metric's series (all with the same label names). */
function labelKey(labelNames: readonly string[], labels: Labels): string {
  // Most metrics have one label or none and are updated on hot paths (every reservation, call).
  if (labelNames.length === 0) return "";
  if (labelNames.length === 1) return labels[labelNames[0]!] ?? "";
  return labelNames.map((n) => labels[n] ?? "").join("\u0000");
}

function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function renderLabels(labelNames: readonly string[], values: readonly string[], extra = ""): string {
  const parts = labelNames.map((n, i) => `${n}="${escapeLabelValue(values[i] ?? "")}"`);
  if (extra) parts.push(extra);
  return parts.length ? `{${parts.join(",")}}` : "";
}

/** escapeHelp: HELP text may hold any character; the exposition format escapes backslash and newline there. */
export function escapeHelp(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function header(name: string, help: string, type: string): string[] {
  return [`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`];
}

function formatValue(v: number): string {
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

interface Metric {
  readonly name: string;
  render(): string;
}

abstract class LabelledMetric<V> implements Metric {
  protected readonly series = new Map<string, { values: string[]; v: V }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {}
  protected get(labels: Labels, init: () => V): V {
    const key = labelKey(this.labelNames, labels);
    let s = this.series.get(key);
    if (!s) {
      s = { values: this.labelNames.map((n) => labels[n] ?? ""), v: init() };
      this.series.set(key, s);
    }
    return s.v;
  }
  /** labelValues: the values a label has taken so far (every series). */
  labelValues(name: string): string[] {
    const i = this.labelNames.indexOf(name);
    return i < 0 ? [] : [...new Set([...this.series.values()].map((s) => s.values[i]!))];
  }
  abstract render(): string;
}

export class Counter extends LabelledMetric<{ n: number }> {
  private collector?: () => void;
  /**
   * onCollect runs just before rendering, for a total that is counted elsewhere (CPU seconds, a
   * component's own tally); the callback reports it with setTotal.
   */
  onCollect(fn: () => void): this {
    this.collector = fn;
    return this;
  }
  inc(labels: Labels = {}, by = 1): void {
    if (!(by >= 0)) throw new Error(`counter ${this.name}: increment must be >= 0, got ${by}`);
    this.get(labels, () => ({ n: 0 })).n += by;
  }
  /** setTotal brings the counter up to a total kept elsewhere; a counter never goes down, so a smaller total is ignored. */
  setTotal(labels: Labels, total: number): void {
    const c = this.get(labels, () => ({ n: 0 }));
    if (total > c.n) c.n = total;
  }
  value(labels: Labels = {}): number {
    return this.series.get(labelKey(this.labelNames, labels))?.v.n ?? 0;
  }
  render(): string {
    this.collector?.();
    const lines = header(this.name, this.help, "counter");
    for (const s of this.series.values()) lines.push(`${this.name}${renderLabels(this.labelNames, s.values)} ${formatValue(s.v.n)}`);
    return lines.join("\n");
  }
}

export class Gauge extends LabelledMetric<{ n: number }> {
  private collector?: () => void;
  /** onCollect runs just before rendering, to read a value that lives elsewhere. */
  onCollect(fn: () => void): this {
    this.collector = fn;
    return this;
  }
  set(labels: Labels, value: number): void {
    this.get(labels, () => ({ n: 0 })).n = value;
  }
  inc(labels: Labels = {}, by = 1): void {
    this.get(labels, () => ({ n: 0 })).n += by;
  }
  value(labels: Labels = {}): number {
    return this.series.get(labelKey(this.labelNames, labels))?.v.n ?? 0;
  }
  render(): string {
    this.collector?.();
    const lines = header(this.name, this.help, "gauge");
    for (const s of this.series.values()) lines.push(`${this.name}${renderLabels(this.labelNames, s.values)} ${formatValue(s.v.n)}`);
    return lines.join("\n");
  }
}

export class Histogram extends LabelledMetric<{ counts: number[]; sum: number; count: number }> {
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    readonly buckets: readonly number[],
  ) {
    super(name, help, labelNames);
  }
  observe(labels: Labels, value: number): void {
    const h = this.get(labels, () => ({ counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) h.counts[i]!++;
    h.sum += value;
    h.count++;
  }
  count(labels: Labels = {}): number {
    return this.series.get(labelKey(this.labelNames, labels))?.v.count ?? 0;
  }
  render(): string {
    const lines = header(this.name, this.help, "histogram");
    for (const s of this.series.values()) {
      this.buckets.forEach((b, i) =>
        lines.push(`${this.name}_bucket${renderLabels(this.labelNames, s.values, `le="${formatValue(b)}"`)} ${s.v.counts[i]}`),
      );
      lines.push(`${this.name}_bucket${renderLabels(this.labelNames, s.values, `le="+Inf"`)} ${s.v.count}`);
      lines.push(`${this.name}_sum${renderLabels(this.labelNames, s.values)} ${formatValue(s.v.sum)}`);
      lines.push(`${this.name}_count${renderLabels(this.labelNames, s.values)} ${s.v.count}`);
    }
    return lines.join("\n");
  }
}

/** Task duration buckets in seconds, 100 ms .. 6 h. */
export const TASK_DURATION_BUCKETS_SECONDS = [0.1, 0.5, 1, 5, 15, 30, 60, 300, 900, 1800, 3600, 7200, 21600];

/**
 * BoundedLabel keeps a label's cardinality finite: the first `max` distinct values are kept as
 * they are, every later one is reported as `overflow` (user-chosen names such as table names
 * must not grow a series per value without end).
 */
export class BoundedLabel {
  private readonly seen = new Set<string>();
  constructor(
    readonly max: number,
    readonly overflow = "_other",
  ) {}
  value(v: string): string {
    if (this.seen.has(v)) return v;
    if (this.seen.size >= this.max) return this.overflow;
    this.seen.add(v);
    return v;
  }
}

/** Latency buckets in seconds, 100 µs .. 10 s. */
export const LATENCY_BUCKETS_SECONDS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class MetricsRegistry {
  private readonly metrics = new Map<string, Metric>();

  private add<M extends Metric>(m: M): M {
    if (this.metrics.has(m.name)) throw new Error(`metric ${m.name} registered twice`);
    this.metrics.set(m.name, m);
    return m;
  }
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.add(new Counter(name, help, labelNames));
  }
  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.add(new Gauge(name, help, labelNames));
  }
  histogram(name: string, help: string, labelNames: readonly string[] = [], buckets = LATENCY_BUCKETS_SECONDS): Histogram {
    return this.add(new Histogram(name, help, labelNames, buckets));
  }
  render(): string {
    return [...this.metrics.values()].map((m) => m.render()).join("\n") + "\n";
  }
}
