import { expect, test } from "bun:test";
import { StderrGate } from "./stderr-gate";

test("at most perSecond lines a second are logged; the dropped ones are counted and told with the next logged line", () => {
  const gate = new StderrGate(3);
  const logged = Array.from({ length: 10 }, () => gate.admit(1_000)).filter((a) => a.log);
  expect(logged).toHaveLength(3);
  expect(gate.droppedTotal).toBe(7);
  // The next second: the first line carries the count of the 7 dropped.
  expect(gate.admit(2_000)).toEqual({ log: true, droppedBefore: 7 });
  expect(gate.admit(2_001)).toEqual({ log: true, droppedBefore: 0 });
  gate.admit(2_002);
  expect(gate.admit(2_003)).toEqual({ log: false, droppedBefore: 0 });
  expect(gate.untold()).toBe(1);
  expect(gate.untold()).toBe(0);
  expect(gate.droppedTotal).toBe(8);
});

test("a steady trickle under the rate is never dropped", () => {
  const gate = new StderrGate(20);
  for (let ms = 0; ms < 10_000; ms += 100) expect(gate.admit(ms).log).toBe(true);
  expect(gate.droppedTotal).toBe(0);
});
