import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteTableStore } from "./stores/sqlite-table-store";
import { CallErrorCode } from "../runtime/calls/call";
import type { JsonValue } from "../runtime/json/raw-json";
import { WriteRejected } from "./writer";
import { blockTablesOf, OUTPUT_KINDS, openWriters as createWriters, outputOf, parseOutputs, writesTables } from "./output-kinds";
import { type OutputKind, type OutputSpec, OutputSpecError, WriterSetupError } from "./output";
import { TaskOutputs } from "./task-outputs";
import { Output as OutputProto } from "../gen/worker/v1/worker";
import { TableStoreError } from "./stores/table-store";
import { scopeLedgerName } from "./stores/table-schema";

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
    await expect(tables.read(scopeLedgerName("b"))).rejects.toThrow("no table"); // no ledger unless asked (record_scopes)
    await tables.close();
  });

  test("record_scopes: a block table's scope ledger records each scope with the rows, one whose function returned no rows too; a long table name's ledger fits 63 characters", async () => {
    const tables = store();
    const [block] = createWriters([{ kind: "blockTableWrite", table: "b", recordScopes: true } as OutputSpec], deps({ tables }));
    expect(block!.stage({ index: 0, input: { chain: "eth", blockNumber: 1 }, value: [] }).map((w) => w.table)).toEqual(["b", "_blockx_scopes_b"]);
    for (const [n, value] of [[1, [{ v: 1 }]], [2, []], [3, [{ v: 3 }, { v: 4 }]]] as const) {
      await tables.commit(block!.stage({ index: n, input: { chain: "eth", blockNumber: n }, value: value as unknown as JsonValue, blockHash: "0x" + String(n).repeat(64) }));
    }
    expect((await tables.read("b")).map((r) => r._scope_from)).toEqual([1, 3, 3]);
    const ledger = await tables.read(scopeLedgerName("b"), { orderBy: "_scope_from" });
    expect(ledger.map((r) => [r._scope_from, r.row_count, r._block_hash])).toEqual([
      [1, 1, "0x" + "1".repeat(64)],
      [2, 0, "0x" + "2".repeat(64)],
      [3, 2, "0x" + "3".repeat(64)],
    ]);
    const long = "t".repeat(63);
    expect(scopeLedgerName(long)).toHaveLength(63);
    expect(scopeLedgerName(long)).not.toBe(scopeLedgerName("t".repeat(62) + "u"));
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

describe("output kinds", () => {
  const ALL: OutputKind[] = ["blockTableWrite", "normalTableWrite", "returnValue"];
  const proto = (o: unknown) => OutputProto.fromPartial(o as Parameters<typeof OutputProto.fromPartial>[0]);

  test("every case of the proto's Output.handler has one output kind, named as on the wire", () => {
    // The proto's oneof, as its JSON names: one Output each, none twice.
    const json = (o: unknown) => Object.keys(o as object);
    const cases = json(OutputProto.toJSON(OutputProto.fromJSON({ block_table_write: { table: "t" } }))).concat(
      json(OutputProto.toJSON(OutputProto.fromJSON({ normal_table_write: { table: "t" } }))),
      json(OutputProto.toJSON(OutputProto.fromJSON({ return_value: {} }))),
    );
    expect(OUTPUT_KINDS.map((o) => o.name).sort()).toEqual(cases.map((c) => c.replace(/[A-Z]/g, (x) => `_${x.toLowerCase()}`)).sort());
    expect(OUTPUT_KINDS.map((o) => o.kind).sort()).toEqual([...ALL].sort());
    for (const k of ALL) expect(outputOf(k).kind).toBe(k);
  });

  test("parseOutputs: specs in the task's order; every problem names its field", () => {
    const outputs = [proto({ handler: { $case: "blockTableWrite", blockTableWrite: { table: "b" } } }), proto({ handler: { $case: "normalTableWrite", normalTableWrite: { table: "n" } } }), proto({ handler: { $case: "returnValue", returnValue: {} } })];
    const specs = parseOutputs(outputs, ALL, "block", true);
    expect(specs).toEqual([{ kind: "blockTableWrite", table: "b" }, { kind: "normalTableWrite", table: "n" }, { kind: "returnValue" }]);
    expect(writesTables(specs)).toBe(true);
    expect(writesTables([{ kind: "returnValue" }])).toBe(false);
    expect(blockTablesOf(specs)).toEqual(["b"]);
    const problem = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return e instanceof OutputSpecError ? e.message : `not OutputSpecError: ${String(e)}`;
      }
      return "no error";
    };
    expect(problem(() => parseOutputs([], ALL, "block", true))).toBe("task.outputs: at least one output is required");
    expect(problem(() => parseOutputs([proto({})], ALL, "block", true))).toBe("task.outputs[0]: one of block_table_write, normal_table_write, return_value is required");
    expect(problem(() => parseOutputs([outputs[2]!], ["blockTableWrite", "normalTableWrite"], "bundle", true))).toBe("task.outputs[0].return_value: the bundle cluster does not run this writer");
    expect(problem(() => parseOutputs([outputs[0]!], ALL, "block", false))).toBe("task.outputs[0].block_table_write: needs a block_table or block_bundle call config (inputs have no block)");
    expect(problem(() => parseOutputs([outputs[1]!, proto({ handler: { $case: "normalTableWrite", normalTableWrite: { table: "_blockx_runs" } } })], ALL, "block", true))).toMatch(/^task\.outputs\[1\]\.normal_table_write\.table: /);
  });

  test("TaskOutputs commits a call's tables in one transaction and tells every writer; a failed commit writes and tells none", async () => {
    const tables = store();
    // b holds w as TEXT, n as INTEGER: a call whose w is text fits b but not n.
    await tables.commit([{ kind: "replaceBlock", table: "b", scope: { chain: "eth", fromBlock: 99, toBlock: 99 }, rows: [{ w: "earlier" }] }, { kind: "append", table: "n", rows: [{ w: 5 }] }]);
    const outputs: OutputSpec[] = [{ kind: "blockTableWrite", table: "b" }, { kind: "normalTableWrite", table: "n" }, { kind: "returnValue" }];
    const set = TaskOutputs.open(outputs, deps({ tables }), null);
    const bad = await set.commit({ index: 1, input: { chain: "eth", blockNumber: 2 }, value: [{ w: "a" }] });
    expect(bad.ok ? "ok" : [bad.rejected.code, bad.rejected.retryable, bad.storeReached]).toEqual([CallErrorCode.RowMismatch, false, undefined]);
    expect((await tables.read("b")).map((r) => r._scope_from)).toEqual([99]);
    const ok = await set.commit({ index: 0, input: { chain: "eth", blockNumber: 1 }, value: [{ w: null }] });
    expect(ok).toEqual({ ok: true, storeReached: true });
    expect((await tables.read("b")).length).toBe(2);
    expect((await tables.read("n")).length).toBe(2);
    set.finish();
    expect(set.summaries().map((s) => [s.table, s.rowsWritten, s.callsWritten])).toEqual([["b", 1, 1], ["n", 1, 1]]);
    expect(set.returnValues()[0]).toEqual([{ w: null }]);
    expect(set.returnValues()[1]).toBeUndefined();
    // A store that cannot be reached: STORE_UNAVAILABLE, retryable, and the store counts as not reached.
    const down = TaskOutputs.open([{ kind: "normalTableWrite", table: "n" }], deps({ tables: { ...tables, commit: () => Promise.reject(new TableStoreError("STORE_UNAVAILABLE", "down")) } as never }), null);
    const d = await down.commit({ index: 0, input: null, value: [{ v: 1 }] });
    expect(d.ok ? "ok" : [d.rejected.code, d.rejected.retryable, d.storeReached]).toEqual([CallErrorCode.StoreUnavailable, true, false]);
    // Only a return value: the store is not asked.
    const values = TaskOutputs.open([{ kind: "returnValue" }], deps({ tables: null, scopeOf: null }), null);
    expect(await values.commit({ index: 0, input: 0, value: 7 })).toEqual({ ok: true });
    await tables.close();
  });
});
