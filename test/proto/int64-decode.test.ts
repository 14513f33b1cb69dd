import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { TaskSnapshot, TaskState } from "../../src/gen/worker/v1/worker";

// The generated decoders' int64 conversion is patched (scripts/patch-gen.ts, run by `make proto`):
// these tests hold it to what ts-proto's own conversion promised.
describe("int64 fields of generated messages", () => {
  test("decode to the numbers encoded, negative and up to the largest safe integer", () => {
    for (const ms of [1, 1_764_700_000_123, Number.MAX_SAFE_INTEGER]) {
      const bytes = TaskSnapshot.encode(TaskSnapshot.fromPartial({ taskId: "t", state: TaskState.RUNNING, allocatedAtMs: ms, deadlineMs: -ms, callsTotal: ms })).finish();
      const back = TaskSnapshot.decode(bytes);
      expect([back.allocatedAtMs, back.deadlineMs, back.callsTotal]).toEqual([ms, -ms, ms]);
    }
  });

  test("a value a number cannot hold exactly is refused, as ts-proto's forceLong=number does", () => {
    const over = (field: number, value: bigint) => new BinaryWriter().uint32(10).string("t").uint32(field).int64(value).finish();
    expect(() => TaskSnapshot.decode(over(10 << 3, 2n ** 60n))).toThrow("larger than Number.MAX_SAFE_INTEGER");
    expect(() => TaskSnapshot.decode(over(15 << 3, -(2n ** 60n)))).toThrow("smaller than Number.MIN_SAFE_INTEGER");
  });

  test("every generated file with an int64 conversion carries the patch (make proto ran scripts/patch-gen.ts)", () => {
    const gen = join(import.meta.dir, "..", "..", "src", "gen");
    const files = readdirSync(gen, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
    const withConversion = files.filter((f) => readFileSync(join(gen, f), "utf8").includes("function longToNumber("));
    expect(withConversion.length).toBeGreaterThan(0);
    for (const f of withConversion) expect(readFileSync(join(gen, f), "utf8")).toContain('typeof int64 === "bigint" ? globalThis.Number(int64)');
  });
});
