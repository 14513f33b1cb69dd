import { describe, expect, test } from "bun:test";
import { ErrorCode } from "../../common/error-code";
import { formatSlotId, parseSlotId } from "./slot-id";
import { assertTransition, holdsSlot, isTerminal, TASK_TRANSITIONS, type TaskLifeState } from "./task-transitions";
import { IllegalTransitionError, WorkerError } from "./worker-error";

const ALL: readonly TaskLifeState[] = ["NEW", "ALLOCATED", "RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED", "FORGOTTEN"];

describe("TASK_TRANSITIONS", () => {
  test("the table allows exactly the documented moves and every other move throws a typed INTERNAL error", () => {
    const allowed: string[] = [];
    for (const from of ALL) {
      for (const to of ALL) {
        try {
          assertTransition("t1", from, to);
          allowed.push(`${from}->${to}`);
        } catch (e) {
          expect(e).toBeInstanceOf(IllegalTransitionError);
          expect(e).toBeInstanceOf(WorkerError);
          const err = e as IllegalTransitionError;
          expect([err.code, err.taskId, err.from, err.to]).toEqual([ErrorCode.ErrInternal, "t1", from, to]);
          expect(err.message).toBe(`[INTERNAL] illegal task transition ${from} -> ${to} for task "t1"`);
        }
      }
    }
    expect(allowed).toEqual([
      "NEW->ALLOCATED",
      "NEW->RUNNING",
      "ALLOCATED->RUNNING",
      "ALLOCATED->CANCELLED",
      "ALLOCATED->FORGOTTEN",
      "RUNNING->SUCCEEDED",
      "RUNNING->FAILED",
      "RUNNING->TIMED_OUT",
      "RUNNING->CANCELLED",
      "SUCCEEDED->FORGOTTEN",
      "FAILED->FORGOTTEN",
      "TIMED_OUT->FORGOTTEN",
      "CANCELLED->FORGOTTEN",
    ]);
  });

  test("no terminal state leads back to a state that holds a slot", () => {
    for (const from of ALL.filter(isTerminal)) {
      expect(TASK_TRANSITIONS[from].filter((to) => holdsSlot(to) || to === "NEW")).toEqual([]);
    }
    expect(ALL.filter(holdsSlot)).toEqual(["ALLOCATED", "RUNNING"]);
    expect(ALL.filter(isTerminal)).toEqual(["SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"]);
  });
});

describe("slot ids", () => {
  test("a slot id carries the incarnation and the counter, and only well-formed ids parse", () => {
    expect(formatSlotId("k3x9", 17)).toBe("k3x9.17");
    expect(parseSlotId("k3x9.17")).toEqual({ incarnation: "k3x9", counter: 17 });
    expect(parseSlotId("a_b-C.9007199254740991")).toEqual({ incarnation: "a_b-C", counter: 9007199254740991 });
    for (const bad of ["", "k3x9", "k3x9.", ".1", "k3x9.0", "k3x9.01", "k3x9.-1", "a.b.1", "k 3.1", "k3x9.1e3", "k3x9.9007199254740993"]) {
      expect(parseSlotId(bad)).toBeNull();
    }
  });
});
