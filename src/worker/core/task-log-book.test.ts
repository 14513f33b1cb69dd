import { describe, expect, test } from "bun:test";
import { TaskLogBook, type CallLog, type TaskLogCaps } from "./task-log-book";

const caps = (o: Partial<TaskLogCaps> = {}): TaskLogCaps => ({ bytesPerTask: 1000, bytesPerLine: 100, bytesPerCall: 500, maxTasks: 10, ...o });
const call = (i: number, o: Partial<CallLog> = {}): CallLog => ({ callIndex: i, attempt: 1, input: `block ${100 + i}`, endedAtMs: 1000 + i, logs: [], stdout: "", stderr: "", ...o });
const texts = (r: { entries: readonly { text: string }[] } | null) => r?.entries.map((e) => e.text);

describe("TaskLogBook", () => {
  test("a call's ctx.log lines (by time), then stdout, then stderr, tagged with the call's input, numbered in order", () => {
    const b = new TaskLogBook(caps());
    b.append("t", call(0, { logs: [{ timeMs: 5, level: "warning", message: "second" }, { timeMs: 2, level: "info", message: "first" }], stdout: "printed\nagain\n", stderr: "oops" }));
    b.append("t", call(1, { stdout: "next call" }));
    const r = b.read("t")!;
    expect(r.entries.map((e) => [e.seq, e.stream, e.level, e.input, e.text])).toEqual([
      [1, "log", "info", "block 100", "first"],
      [2, "log", "warning", "block 100", "second"],
      [3, "stdout", "", "block 100", "printed"],
      [4, "stdout", "", "block 100", "again"],
      [5, "stderr", "", "block 100", "oops"],
      [6, "stdout", "", "block 101", "next call"],
    ]);
    expect(r.droppedBefore).toBe(0);
    expect(r.lastSeq).toBe(6);
    expect(b.read("unknown")).toBeNull();
  });

  test("follow: reading after a seq returns only newer lines; tail returns the last n", () => {
    const b = new TaskLogBook(caps());
    for (let i = 0; i < 5; i++) b.append("t", call(i, { stdout: `line ${i}` }));
    expect(texts(b.read("t", { afterSeq: 3 }))).toEqual(["line 3", "line 4"]);
    expect(texts(b.read("t", { tail: 2 }))).toEqual(["line 3", "line 4"]);
    expect(texts(b.read("t", { afterSeq: 5 }))).toEqual([]);
    expect(b.read("t", { afterSeq: 5 })!.lastSeq).toBe(5);
  });

  test("over bytesPerTask the oldest lines go first, and a reader is told how many it missed", () => {
    const b = new TaskLogBook(caps({ bytesPerTask: 30 }));
    for (let i = 0; i < 10; i++) b.append("t", call(i, { stdout: `line ${i}!` })); // 7 bytes each
    const r = b.read("t")!;
    expect(texts(r)).toEqual(["line 6!", "line 7!", "line 8!", "line 9!"]);
    expect(r.droppedBefore).toBe(6);
    expect(b.dropped("t")).toBe(6);
    // A follower that had read up to seq 3 learns that seqs 4..6 are gone.
    expect(b.read("t", { afterSeq: 3 })!.droppedBefore).toBe(3);
    expect(b.read("t", { afterSeq: 8 })!.droppedBefore).toBe(0);
    // A tail that skips lines by request reports nothing dropped.
    expect(b.read("t", { tail: 1 })!.droppedBefore).toBe(0);
  });

  test("a long line is cut saying how much; a chatty call's lines beyond bytesPerCall become one line saying how many", () => {
    const b = new TaskLogBook(caps({ bytesPerLine: 10, bytesPerCall: 25 }));
    b.append("t", call(0, { stdout: `${"x".repeat(25)}\n` }));
    expect(texts(b.read("t"))).toEqual(["xxxxxxxxxx [15 bytes cut]"]);
    const c = new TaskLogBook(caps({ bytesPerLine: 100, bytesPerCall: 25 }));
    c.append("t", call(0, { stdout: Array.from({ length: 10 }, (_, i) => `line ${i}!`).join("\n") }));
    expect(texts(c.read("t"))).toEqual(["line 0!", "line 1!", "line 2!", "[7 more lines of this call dropped: over 25 bytes per call]"]);
  });

  test("a cut never splits a UTF-8 character", () => {
    const b = new TaskLogBook(caps({ bytesPerLine: 5 }));
    b.append("t", call(0, { stdout: "ééééé" })); // 2 bytes each
    expect(texts(b.read("t"))).toEqual(["éé [6 bytes cut]"]);
  });

  test("forget drops a task's lines; past maxTasks the oldest task's lines go", () => {
    const b = new TaskLogBook(caps({ maxTasks: 2 }));
    b.append("a", call(0, { stdout: "a" }));
    b.append("b", call(0, { stdout: "b" }));
    b.append("c", call(0, { stdout: "c" }));
    expect(b.read("a")).toBeNull();
    expect(texts(b.read("c"))).toEqual(["c"]);
    b.forget("c");
    expect(b.read("c")).toBeNull();
    expect(b.taskCount).toBe(1);
  });
});
