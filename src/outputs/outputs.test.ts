import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteTableStore } from "./stores/sqlite-table-store";
import { CallErrorCode } from "../runtime/calls/call";
import type { JsonValue } from "../runtime/executor/protocol";
import { WriteRejected } from "./writer";
import { createWriters, type OutputSpec, WriterSetupError } from "./output-kinds";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function store(): SqliteTableStore {
  const d = mkdtempSync(join(tmpdir(), "blockx-writers-"));
  dirs.push(d);
  return new SqliteTableStore(join(d, "t.sqlite"), { inline: true });
}
const scopeOf = (input: JsonValue) => {
  const i = input as { chain: string; blockNumber: number };
  return { chain: i.chain, fromBlock: i.blockNumber, toBlock: i.blockNumber };
};
const deps = (over: Partial<Parameters<typeof createWriters>[1]> = {}) => ({ totalCalls: 3, scopeOf, tables: store(), ...over });

describe("writer plugins", () => {
  test("one writer per output, in the task's order; each stages its table's write and counts only what committed", async () => {
    const outputs: OutputSpec[] = [{ kind: "blockTableWrite", table: "b" }, { kind: "normalTableWrite", table: "n" }, { kind: "returnValue" }];
    const tables = store();
    const d = deps({ tables });
    const writers = createWriters(outputs, d);
    for (let i = 0; i < 3; i++) {
      const call = { index: 2 - i, input: { chain: "eth", blockNumber: 10 + i }, value: [{ v: i }, { v: i + 10 }] };
      const staged = writers.map((w) => w.stage(call));
      expect(staged.map((s) => s.map((w) => [w.kind, w.table]))).toEqual([[["replaceBlock", "b"]], [["append", "n"]], []]);
      const outcomes = await tables.commit(staged.flat());
      writers[0]!.committed(call, outcomes.slice(0, 1));
      writers[1]!.committed(call, outcomes.slice(1, 2));
      writers[2]!.committed(call, []);
    }
    // Return values exist only once WRITE sealed them, in call-index order.
    expect(writers[2]!.returnValues()).toBeUndefined();
    for (const w of writers) w.finish();
    expect(writers.map((w) => w.summary())).toEqual([
      { table: "b", handler: "block_table_write", rowsWritten: 6, callsWritten: 3 },
      { table: "n", handler: "normal_table_write", rowsWritten: 6, callsWritten: 3 },
      undefined,
    ]);
    expect(writers[2]!.returnValues()).toEqual([[{ v: 2 }, { v: 12 }], [{ v: 1 }, { v: 11 }], [{ v: 0 }, { v: 10 }]]);
    expect((await tables.read("b")).length).toBe(6);
    await tables.close();
  });

  test("a value that is not rows is rejected with RESULT_NOT_ROWS when staged", () => {
    const [block, normal] = createWriters([{ kind: "blockTableWrite", table: "b" }, { kind: "normalTableWrite", table: "n" }], deps());
    const reject = (f: () => void) => {
      try {
        f();
      } catch (e) {
        return e instanceof WriteRejected ? [e.code, e.retryable] : ["not WriteRejected", String(e)];
      }
      return ["no error", ""];
    };
    expect(reject(() => block!.stage({ index: 0, input: { chain: "eth", blockNumber: 1 }, value: 5 }))).toEqual([CallErrorCode.ResultNotRows, false]);
    expect(reject(() => normal!.stage({ index: 0, input: null, value: [[1]] }))).toEqual([CallErrorCode.ResultNotRows, false]);
    expect(normal!.summary()).toEqual({ table: "n", handler: "normal_table_write", rowsWritten: 0, callsWritten: 0 });
  });

  test("a table output on a Worker without a table store, or a block table without blocks, cannot be set up", () => {
    expect(() => createWriters([{ kind: "normalTableWrite", table: "n" }], deps({ tables: null }))).toThrow(WriterSetupError);
    expect(() => createWriters([{ kind: "blockTableWrite", table: "b" }], deps({ scopeOf: null }))).toThrow("needs a block_table or block_bundle call config");
    expect(createWriters([{ kind: "returnValue" }], deps({ tables: null, scopeOf: null }))).toHaveLength(1);
  });
});

describe("return values kept per task", () => {
  test("a call whose value would take the task past its byte bound is RESULT_TOO_LARGE, not retried; what committed stays counted", () => {
    const [w] = createWriters([{ kind: "returnValue" }], deps({ tables: null, scopeOf: null, totalCalls: 4, maxResultBytes: 25 }));
    const call = (index: number, value: JsonValue) => ({ index, input: index, value });
    // '"aaaaaaaaaa"' is 12 bytes of JSON: two fit in 25, a third does not.
    w!.stage(call(0, "a".repeat(10)));
    w!.committed(call(0, "a".repeat(10)), []);
    // Staged twice (a retry after a failed commit) and committed once: counted once.
    w!.stage(call(1, "b".repeat(10)));
    w!.stage(call(1, "b".repeat(10)));
    w!.committed(call(1, "b".repeat(10)), []);
    let err: unknown;
    try {
      w!.stage(call(2, "c"));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(WriteRejected);
    expect((err as WriteRejected).code).toBe(CallErrorCode.ResultTooLarge);
    expect((err as WriteRejected).retryable).toBe(false);
    expect((err as WriteRejected).message).toContain("would take 27 bytes of JSON (this call's: 3), over the limit of 25 per task (TASK_MAX_RESULT_BYTES)");
  });
});
