import { describe, expect, test } from "bun:test";
import { DeadlineHeap } from "./deadline-heap";

describe("DeadlineHeap", () => {
  test("breakers opened in any order come out by deadline, ties included", () => {
    const heap = new DeadlineHeap<string>();
    expect(heap.peekDeadline()).toBe(Number.POSITIVE_INFINITY);
    expect(heap.pop()).toBeUndefined();
    expect(heap.peekItem()).toBeUndefined();
    let x = 12345;
    const pushed: Array<[number, string]> = [];
    for (let i = 0; i < 500; i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      const deadline = x % 50; // many equal deadlines
      pushed.push([deadline, `w${i}`]);
      heap.push(deadline, `w${i}`);
    }
    expect(heap.size).toBe(500);
    expect(heap.entries().map(([d, w]) => `${d}:${w}`).sort()).toEqual(pushed.map(([d, w]) => `${d}:${w}`).sort());
    const deadlineOf = new Map(pushed.map(([d, w]) => [w, d]));
    const popped: number[] = [];
    const items = new Set<string>();
    while (heap.size > 0) {
      const peeked = heap.peekDeadline();
      const head = heap.peekItem();
      const item = heap.pop() as string;
      expect(item).toBe(head as string); // peekItem names the item pop returns next
      expect(deadlineOf.get(item)).toBe(peeked); // the item travels with its deadline
      popped.push(peeked);
      items.add(item);
    }
    expect(popped).toEqual(pushed.map(([d]) => d).sort((a, b) => a - b));
    expect(items.size).toBe(500);
  });
});
