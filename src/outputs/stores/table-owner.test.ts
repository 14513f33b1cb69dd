import { describe, expect, test } from "bun:test";
import { ownerOfNewTable, ownerProblem, writerOf } from "./table-owner";

describe("table owners", () => {
  const alice = writerOf("client/alice", false);
  const bob = writerOf("client/bob", false);
  const ops = writerOf("admin/ops", true);

  test("the owner and admins may write a table; another identity may not, told whose it is", () => {
    expect(ownerProblem("t", "client/alice", alice)).toBeNull();
    expect(ownerProblem("t", "client/alice", ops)).toBeNull();
    expect(ownerProblem("t", "client/alice", bob)).toBe("table t belongs to client/alice: client/bob may not write it (only its owner or an admin may)");
    expect(ownerProblem("t", "proxy/gw/uid:1000", writerOf("proxy/gw/uid:1001", false))).toContain("belongs to proxy/gw/uid:1000");
  });

  test("an unowned table is anyone's; a writer without an identity (BLOCKX_INSECURE) is not checked and makes unowned tables", () => {
    expect(ownerProblem("t", null, bob)).toBeNull();
    expect(writerOf("", false)).toBeNull();
    expect(ownerProblem("t", "client/alice", writerOf("", false))).toBeNull();
    expect(ownerOfNewTable("t", null)).toBeNull();
    expect(ownerOfNewTable("t", alice)).toBe("client/alice");
  });

  test("the store's own tables (the reserved _blockx namespace, written beside every task's rows) belong to nobody", () => {
    expect(ownerOfNewTable("_blockx_ledger", alice)).toBeNull();
    expect(ownerProblem("_BLOCKX_ledger", "client/alice", bob)).toBeNull();
  });
});
