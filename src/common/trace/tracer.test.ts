import { describe, expect, test } from "bun:test";
import { NOOP_TRACER, RecordingTracer, type TraceEvent } from "./tracer";

/** A tracer on a clock the test moves by hand. */
function tracerAt(capacity = 100, maxOpen = 100) {
  const clock = { us: 1_000 };
  const tracer = new RecordingTracer(7, () => clock.us, capacity, maxOpen);
  return { clock, tracer };
}

const byName = (events: TraceEvent[], name: string) => events.filter((e) => e.name === name);

describe("RecordingTracer", () => {
  test("a request's stages are consecutive children that add up to the request exactly", () => {
    const { clock, tracer } = tracerAt();
    const req = tracer.span("ReserveWorkerSlot", { taskId: "t1" });
    clock.us += 5;
    req.stage("validate"); // the first stage begins where the span began
    clock.us += 10;
    req.stage("RequestTaskSlot", { workerAddr: "w:1" });
    clock.us += 300;
    req.stage("reply");
    clock.us += 7;
    req.end({ code: "OK" });

    const events = tracer.snapshot();
    const root = byName(events, "ReserveWorkerSlot")[0]!;
    const stages = events.filter((e) => e.args?.parent === root.args!.span);
    expect(stages.map((e) => [e.name, e.ts, e.dur])).toEqual([
      ["validate", 1_000, 15],
      ["RequestTaskSlot", 1_015, 300],
      ["reply", 1_315, 7],
    ]);
    expect(root).toMatchObject({ ph: "X", ts: 1_000, dur: 322, pid: 7, args: { taskId: "t1", code: "OK", parent: 0 } });
    expect(new Set(events.map((e) => e.tid))).toEqual(new Set([root.tid])); // one lane: nested as drawn
  });

  test("overlapping children go to lanes of their own but name their parent; open ones are cut at the snapshot", () => {
    const { clock, tracer } = tracerAt();
    const task = tracer.span("task", {}, "task:t1");
    const a = tracer.open("task:t1")!.child("call", { callId: "t1/0/1" }, "call:t1/0/1");
    const b = task.child("call", { callId: "t1/1/1" });
    clock.us += 50;
    tracer.open("call:t1/0/1")!.completed("queue", 1_000, 1_020);
    a.end();
    expect(tracer.open("call:t1/0/1")).toBeUndefined(); // keys are forgotten with their span
    const events = tracer.snapshot();
    const [callA, callB] = byName(events, "call");
    const root = byName(events, "task")[0]!;
    expect(callA!.args).toMatchObject({ parent: root.args!.span });
    expect(callB!.args).toMatchObject({ parent: root.args!.span, unfinished: true });
    expect(callA!.tid).not.toBe(callB!.tid);
    expect(byName(events, "queue")[0]).toMatchObject({ ts: 1_000, dur: 20, tid: callA!.tid, args: { parent: callA!.args!.span } });
    b.end();
  });

  test("past its capacity the tracer keeps the newest events and counts the rest; past MAX_OPEN_SPANS it records nothing new, counted", () => {
    const { tracer } = tracerAt(4, 2);
    for (let i = 0; i < 10; i++) tracer.span("s", { i }).end();
    expect(tracer.ring.dropped).toBe(6);
    expect(tracer.snapshot().map((e) => e.args!.i)).toEqual([6, 7, 8, 9]);
    const open = [tracer.span("a"), tracer.span("b"), tracer.span("c")];
    expect(tracer.droppedSpans).toBe(1);
    for (const s of open) s.end();
  });

  test("a long string argument is cut, and ending a span twice records it once", () => {
    const { tracer } = tracerAt();
    const s = tracer.span("s", { reason: "x".repeat(1000) });
    s.end();
    s.end();
    const events = tracer.snapshot();
    expect(events).toHaveLength(1);
    expect((events[0]!.args!.reason as string).length).toBe(201);
  });

  test("the no-op tracer hands out one shared span and remembers nothing", () => {
    const s = NOOP_TRACER.span("x", { a: 1 }, "k");
    expect(NOOP_TRACER.span("y")).toBe(s);
    expect(s.child("c")).toBe(s);
    expect(NOOP_TRACER.open("k")).toBeUndefined();
  });
});
