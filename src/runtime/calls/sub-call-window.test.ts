import { describe, expect, test } from "bun:test";
import { SubCallWindow } from "./sub-call-window";

describe("SubCallWindow", () => {
  test("past its size a parent's sub-calls wait, first come first served; other parents are not held back", async () => {
    const w = new SubCallWindow(2);
    const order: string[] = [];
    await w.enter("p");
    await w.enter("p");
    const third = w.enter("p").then(() => order.push("third"));
    const fourth = w.enter("p").then(() => order.push("fourth"));
    await w.enter("q"); // another parent has its own window
    await Bun.sleep(1);
    expect(order).toEqual([]);
    expect(w.inflight("p")).toBe(2);
    w.leave("p");
    await third;
    expect(order).toEqual(["third"]);
    w.leave("p");
    await fourth;
    expect(order).toEqual(["third", "fourth"]);
    w.leave("p");
    w.leave("p");
    expect(w.inflight("p")).toBe(0);
    expect(w.inflight("q")).toBe(1);
  });
});
