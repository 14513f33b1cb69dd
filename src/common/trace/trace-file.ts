import { renameSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Logger } from "../logging/logger";
import { envVar, stringSchema } from "../config/env-config";
import { NOOP_TRACER, RecordingTracer, type Tracer } from "./tracer";

/** The event loop is sampled this often; a tick this much later than due is recorded as a stall. */
export const STALL_PROBE_MS = 20;
export const STALL_MIN_MS = 10;
/** The heap's size is recorded this often (a counter track: a drop is a collection). */
export const HEAP_SAMPLE_MS = 1_000;

/**
 * GC_NOTE goes into every trace file: Bun 1.4.4 exposes no garbage-collection events (no `gc`
 * entry type in PerformanceObserver, no callback in bun:jsc), so a collection shows as an
 * event-loop stall and as a drop of the heap counter, not as a span of its own.
 */
export const GC_NOTE = "Bun exposes no GC events: a collection shows as an event-loop stall and a drop of the heapUsed counter";

/** traceVar: a role's `<ROLE>_TRACE` variable (COORDINATOR_TRACE, WORKER_TRACE, SYNCINVOKER_TRACE). */
export const traceVar = (name: string) =>
  envVar(
    name,
    "",
    "a file path, or empty",
    "write a trace-event timeline (Chrome JSON: Perfetto, chrome://tracing) of requests, event-loop stalls and heap to this file at exit or on SIGUSR2",
    stringSchema(),
  );

/**
 * startTrace returns NOOP_TRACER when `path` is empty. Otherwise it records spans, samples the
 * event loop (stalls) and the heap, and writes the trace to `path` once: on SIGUSR2 (then it
 * stops recording; the process goes on) or when the process exits, whichever comes first. The file
 * is written to a temporary name and renamed, so a reader never sees half a file.
 */
export function startTrace(path: string, role: string, log: Logger): Tracer {
  if (path === "") return NOOP_TRACER;
  const file = resolve(path);
  const tracer = new RecordingTracer(process.pid);
  let written = false;
  let expected = performance.now() + STALL_PROBE_MS;
  const stalls = setInterval(() => {
    const now = performance.now();
    const lateMs = now - expected;
    if (lateMs >= STALL_MIN_MS) {
      tracer.record({ name: "event-loop stall", ph: "X", cat: "runtime", ts: Math.round(expected * 1000), dur: Math.round(lateMs * 1000), args: { lateMs: Math.round(lateMs) } });
    }
    expected = now + STALL_PROBE_MS;
  }, STALL_PROBE_MS);
  const heap = setInterval(() => {
    const m = process.memoryUsage();
    tracer.record({ name: "heap", ph: "C", cat: "runtime", ts: tracer.nowUs(), args: { heapUsed: m.heapUsed, rss: m.rss } });
  }, HEAP_SAMPLE_MS);
  stalls.unref();
  heap.unref();

  const write = (why: string) => {
    if (written) return;
    written = true;
    clearInterval(stalls);
    clearInterval(heap);
    try {
      writeFileSync(`${file}.tmp`, traceFileText(tracer, role));
      renameSync(`${file}.tmp`, file);
      log.info({ component: "trace", file, why, events: tracer.ring.size, droppedEvents: tracer.ring.dropped }, "trace written");
    } catch (err) {
      log.error({ component: "trace", file, err }, "could not write the trace");
    }
  };
  process.on("SIGUSR2", () => write("SIGUSR2"));
  process.on("exit", () => write("exit"));
  log.info({ component: "trace", file }, "tracing: the timeline is written at exit or on SIGUSR2");
  // After SIGUSR2 nothing more is recorded: the adapters hold the tracer, so it turns itself off.
  return {
    enabled: true,
    span: (name, args, key) => (written ? NOOP_TRACER.span(name) : tracer.span(name, args, key)),
    open: (key) => (written ? undefined : tracer.open(key)),
    nowUs: tracer.nowUs,
  };
}

/** traceFileText: the JSON object format of trace-event files, with what was dropped in `otherData`. */
export function traceFileText(tracer: RecordingTracer, role: string): string {
  const meta = [
    { name: "process_name", ph: "M", ts: 0, pid: tracer.pid, tid: 0, args: { name: `blockx ${role}` } },
    { name: "thread_name", ph: "M", ts: 0, pid: tracer.pid, tid: 0, args: { name: "event loop" } },
  ];
  return JSON.stringify({
    traceEvents: [...meta, ...tracer.snapshot()],
    displayTimeUnit: "ms",
    otherData: { role, capacity: tracer.ring.capacity, droppedEvents: tracer.ring.dropped, droppedSpans: tracer.droppedSpans, gc: GC_NOTE },
  });
}
