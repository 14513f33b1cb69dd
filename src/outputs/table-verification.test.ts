import { describe, expect, test } from "bun:test";
import type { ScopeCount } from "./stores/table-store";
import { describeFinding, TableVerification, withLedgerScopes } from "./table-verification";

const hash = (n: number, fork = "") => "0x" + (fork + n.toString(16)).padStart(64, "0");
const canonical = (n: number) => hash(n);
const scope = (fromBlock: number, toBlock: number, o: Partial<ScopeCount> = {}): ScopeCount => ({ fromBlock, toBlock, blockHash: hash(toBlock), runSeq: 1, rows: 2, ...o });

describe("TableVerification", () => {
  test("a table with one scope per block, each recording its canonical block, is clean", () => {
    const v = new TableVerification(1, 4);
    expect(v.add([scope(1, 1), scope(2, 2), scope(3, 4)], canonical)).toEqual([]);
    expect(v.finish()).toEqual([]);
    expect(v.clean).toBe(true);
    expect(v.tally).toEqual({ scopes: 3, rows: 6, unhashed: 0, missingBlocks: 0, staleScopes: 0, doubledScopes: 0 });
  });

  test("a block table on a node that reorganised: the orphaned scope, the gap and the doubled scope are each named", () => {
    const v = new TableVerification(1, 10);
    const found = [
      ...v.add([scope(1, 1), scope(2, 2, { blockHash: hash(2, "f") }), scope(5, 5), scope(5, 5, { runSeq: 2, blockHash: hash(5, "e") })], canonical),
      ...v.add([scope(6, 7), scope(7, 7), scope(8, 8, { blockHash: null })], canonical),
      ...v.finish(),
    ];
    expect(found.map(describeFinding)).toEqual([
      `stale: scope 2..2 was computed from block 2 ${hash(2, "f")}, but the chain's block 2 is ${hash(2)} (orphaned by a reorganisation)`,
      "missing: blocks 3..4 have no rows",
      `doubled: scope 5..5 written 2 times: run 1 (2 rows, hash ${hash(5)}), run 2 (2 rows, hash ${hash(5, "e")})`,
      `stale: scope 5..5 was computed from block 5 ${hash(5, "e")}, but the chain's block 5 is ${hash(5)} (orphaned by a reorganisation)`,
      "doubled: blocks 7..7 are in scope 6..7 and in scope 7..7",
      "missing: blocks 9..10 have no rows",
    ]);
    expect(v.clean).toBe(false);
    expect(v.tally).toMatchObject({ scopes: 6, unhashed: 1, missingBlocks: 4, staleScopes: 2, doubledScopes: 2 });
  });

  test("a scope starting before the range that reaches into it covers its blocks; an empty range of scopes is all missing", () => {
    const v = new TableVerification(10, 12);
    expect(v.add([scope(8, 11)], canonical)).toEqual([]);
    expect(v.finish().map(describeFinding)).toEqual(["missing: block 12 has no rows"]);
    const empty = new TableVerification(0, 999);
    expect(empty.finish()).toEqual([{ kind: "missing", fromBlock: 0, toBlock: 999 }]);
    expect(empty.tally.missingBlocks).toBe(1000);
  });

  test("withLedgerScopes: the ledger's scopes the table lacks join as scopes of 0 rows, in order; those it holds add nothing", () => {
    const sc = (f: number, t: number, rows: number, h = "0xa") => ({ fromBlock: f, toBlock: t, blockHash: h, runSeq: 1, rows });
    const { scopes, empty } = withLedgerScopes([sc(1, 1, 3), sc(4, 4, 2)], [sc(1, 1, 1), sc(2, 2, 1), sc(3, 3, 1), sc(4, 4, 1), sc(5, 5, 1, "0xb")]);
    expect(empty).toBe(3);
    expect(scopes.map((s) => [s.fromBlock, s.rows, s.blockHash])).toEqual([
      [1, 3, "0xa"],
      [2, 0, "0xa"],
      [3, 0, "0xa"],
      [4, 2, "0xa"],
      [5, 0, "0xb"],
    ]);
    const v = new TableVerification(1, 5);
    expect([...v.add(scopes, () => "0xa"), ...v.finish()].map((f) => f.kind)).toEqual(["stale"]);
  });
});
