import { TraceLanes } from "./trace-lanes";
import { TraceRing } from "./trace-ring";

/** Values a span carries (shown by the viewer under "Arguments"); strings are cut to MAX_ARG_CHARS. */
export type TraceArgs = Record<string, string | number | boolean>;

/** One record of the Chrome trace-event format (`X` complete, `C` counter, `M` metadata). */
export interface TraceEvent {
  readonly name: string;
  readonly ph: "X" | "C" | "M";
  readonly ts: number;
  readonly dur?: number;
  readonly pid: number;
  readonly tid: number;
  readonly cat?: string;
  readonly args?: Record<string, unknown>;
}

/** Events a trace keeps (the newest; older ones are dropped and counted): about 150 bytes each in the file. */
export const DEFAULT_TRACE_CAPACITY = 200_000;
/** Spans open at once that a trace follows; a span started beyond it is not recorded (counted). */
export const MAX_OPEN_SPANS = 20_000;
/** A string argument longer than this is cut (an error message, a long task id). */
export const MAX_ARG_CHARS = 200;

/**
 * Span is one timed stretch of a request. `stage` moves through consecutive stages (the previous
 * one ends at the instant the next begins; the first begins where the span began), so a span's
 * stages add up to it exactly; `end` ends the current stage and the span at one instant.
 * Every method is a no-op once the span ended, and on the no-op tracer.
 */
export interface Span {
  /** startUs: when the span began, on its tracer's clock (0 for the no-op span). */
  readonly startUs: number;
  /** child starts a span under this one now (a stretch that may overlap its siblings). */
  child(name: string, args?: TraceArgs, key?: string): Span;
  stage(name: string, args?: TraceArgs): void;
  /** set adds arguments to the span (shown when it ends). */
  set(args: TraceArgs): void;
  /** end ends the span now, or at `atUs` (a time of this tracer's clock, e.g. the end of its last `completed` child). */
  end(args?: TraceArgs, atUs?: number): void;
  /** completed records a finished child from `startUs` to `endUs` (times of this tracer's clock). */
  completed(name: string, startUs: number, endUs: number, args?: TraceArgs): void;
}

/**
 * Tracer hands out spans. The no-op tracer (NOOP_TRACER, when the role's *_TRACE is empty) returns
 * one shared no-op span from every call: tracing off costs a call and no allocation. A span may be
 * given a `key` (a task id, a call id) under which `open` finds it while it is open, so that an
 * adapter that only knows an id can hang its spans under the right parent.
 */
export interface Tracer {
  readonly enabled: boolean;
  span(name: string, args?: TraceArgs, key?: string): Span;
  open(key: string): Span | undefined;
  /** nowUs: the tracer's clock in whole microseconds (for `completed`). */
  nowUs(): number;
}

export const NOOP_SPAN: Span = {
  startUs: 0,
  child: () => NOOP_SPAN,
  stage: () => {},
  set: () => {},
  end: () => {},
  completed: () => {},
};

export const NOOP_TRACER: Tracer = {
  enabled: false,
  span: () => NOOP_SPAN,
  open: () => undefined,
  nowUs: () => 0,
};

/** performanceNowUs: the process's monotonic clock in whole microseconds. */
export const performanceNowUs = (): number => Math.round(performance.now() * 1000);

/**
 * RecordingTracer records spans into a TraceRing as complete events, each with `args.span` (its
 * id) and `args.parent` (its parent's id, 0 for a root), so the nesting is explicit in the file as
 * well as drawn by lanes (TraceLanes). `snapshot` returns what a trace file holds, the spans still
 * open included (cut at that instant, `args.unfinished`). The clock is injected (tests).
 */
export class RecordingTracer implements Tracer {
  readonly enabled = true;
  readonly ring: TraceRing<TraceEvent>;
  private readonly lanes = new TraceLanes();
  private readonly openSpans = new Map<number, RecordedSpan>();
  private readonly keyed = new Map<string, RecordedSpan>();
  private nextId = 0;
  /** Spans not recorded because MAX_OPEN_SPANS were open. */
  droppedSpans = 0;

  constructor(
    readonly pid: number,
    readonly nowUs: () => number = performanceNowUs,
    capacity = DEFAULT_TRACE_CAPACITY,
    private readonly maxOpen = MAX_OPEN_SPANS,
  ) {
    this.ring = new TraceRing(capacity);
  }

  span(name: string, args?: TraceArgs, key?: string): Span {
    return this.start(name, null, this.nowUs(), args, key);
  }

  open(key: string): Span | undefined {
    return this.keyed.get(key);
  }

  /** record keeps one event of the process itself (lane 0: stalls, counters). */
  record(event: Omit<TraceEvent, "pid" | "tid">): void {
    this.ring.push({ ...event, pid: this.pid, tid: 0 });
  }

  /** start opens a span at `atUs`; past MAX_OPEN_SPANS it returns the no-op span (counted). */
  start(name: string, parent: RecordedSpan | null, atUs: number, args: TraceArgs | undefined, key: string | undefined): Span {
    if (this.openSpans.size >= this.maxOpen) {
      this.droppedSpans++;
      return NOOP_SPAN;
    }
    const id = ++this.nextId;
    const lane = this.lanes.open(id, parent);
    const s = new RecordedSpan(this, id, parent?.id ?? 0, lane, name, atUs, args, key);
    this.openSpans.set(id, s);
    if (key !== undefined) this.keyed.set(key, s);
    return s;
  }

  /** finish records an ended span. */
  finish(s: RecordedSpan, endUs: number): void {
    this.openSpans.delete(s.id);
    if (s.key !== undefined && this.keyed.get(s.key) === s) this.keyed.delete(s.key);
    this.lanes.close(s.id, s.lane);
    this.ring.push(s.event(endUs, false));
  }

  /** snapshot: every event kept, oldest first, then the open spans cut at `nowUs`. */
  snapshot(): TraceEvent[] {
    const now = this.nowUs();
    return [...this.ring.toArray(), ...[...this.openSpans.values()].map((s) => s.event(now, true))];
  }
}

class RecordedSpan implements Span {
  private ended = false;
  private current: Span | null = null;
  private hadChildren = false;
  readonly args: Record<string, string | number | boolean>;

  constructor(
    private readonly tracer: RecordingTracer,
    readonly id: number,
    readonly parentId: number,
    readonly lane: number,
    readonly name: string,
    readonly startUs: number,
    args: TraceArgs | undefined,
    readonly key: string | undefined,
  ) {
    this.args = { span: id, parent: parentId };
    if (args) this.set(args);
  }

  child(name: string, args?: TraceArgs, key?: string): Span {
    return this.childAt(name, this.tracer.nowUs(), args, key);
  }

  stage(name: string, args?: TraceArgs): void {
    if (this.ended) return;
    const at = this.current === null && !this.hadChildren ? this.startUs : this.tracer.nowUs();
    this.endStageAt(at);
    this.current = this.childAt(name, at, args, undefined);
  }

  set(args: TraceArgs): void {
    for (const k in args) {
      const v = args[k]!;
      this.args[k] = typeof v === "string" && v.length > MAX_ARG_CHARS ? `${v.slice(0, MAX_ARG_CHARS)}…` : v;
    }
  }

  end(args?: TraceArgs, atUs?: number): void {
    if (this.ended) return;
    if (args) this.set(args);
    const at = atUs ?? this.tracer.nowUs();
    this.endStageAt(at);
    this.endAt(at);
  }

  completed(name: string, startUs: number, endUs: number, args?: TraceArgs): void {
    if (this.ended) return;
    const s = this.childAt(name, startUs, args, undefined);
    if (s instanceof RecordedSpan) s.endAt(endUs);
  }

  /** event: this span as a complete event ending at `endUs`. */
  event(endUs: number, unfinished: boolean): TraceEvent {
    return {
      name: this.name,
      ph: "X",
      ts: this.startUs,
      dur: Math.max(0, endUs - this.startUs),
      pid: this.tracer.pid,
      tid: this.lane,
      args: unfinished ? { ...this.args, unfinished: true } : this.args,
    };
  }

  private childAt(name: string, atUs: number, args: TraceArgs | undefined, key: string | undefined): Span {
    if (this.ended) return NOOP_SPAN;
    this.hadChildren = true;
    return this.tracer.start(name, this, atUs, args, key);
  }

  private endStageAt(atUs: number): void {
    if (this.current instanceof RecordedSpan) this.current.endAt(atUs);
    this.current = null;
  }

  endAt(atUs: number): void {
    if (this.ended) return;
    this.ended = true;
    this.tracer.finish(this, atUs);
  }
}
