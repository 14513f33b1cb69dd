import { describe, expect, test } from "bun:test";
import { RawJson, type JsonValue } from "../../runtime/json/raw-json";
import type { IoAnswer } from "../../runtime/calls/call";
import { blockHashToRecord, readBlockHash, type HashIo } from "./block-hash-read";

const SCOPE = { chain: "eth", fromBlock: 10, toBlock: 12 };
const A = "0x" + "a".repeat(64);
const B = "0x" + "b".repeat(64);

function io(answer: IoAnswer, asked: JsonValue[] = []): HashIo {
  return { call: async (_b, _o, params) => (asked.push(params), { answer }) };
}

describe("readBlockHash", () => {
  test("asks blockdb.headers for the scope's last block and gives its hash", async () => {
    const asked: JsonValue[] = [];
    const r = await readBlockHash(io({ ok: true, value: new RawJson(JSON.stringify([{ number: 12, hash: A, parentHash: B }])), ioMs: 0 }, asked), SCOPE);
    expect(r).toEqual({ ok: true, hash: A });
    expect(asked).toEqual([{ chain: "eth", fromBlock: 12, toBlock: 12 }]);
  });

  test("a chain the Worker cannot reach records no hash; a node's retryable failure stays retryable", async () => {
    expect(await readBlockHash(io({ ok: false, error: { type: "UnknownChain", message: "no chain" }, ioMs: 0 }), SCOPE)).toEqual({ ok: true, hash: null });
    expect(await readBlockHash(io({ ok: false, error: { type: "BlockUnavailable", message: "null", retryable: true }, ioMs: 0 }), SCOPE)).toMatchObject({ ok: false, retryable: true });
    expect(await readBlockHash(io({ ok: false, error: { type: "ChainIdMismatch", message: "31337 vs 1" }, ioMs: 0 }), SCOPE)).toMatchObject({ ok: false, retryable: false, message: expect.stringContaining("ChainIdMismatch: 31337 vs 1") });
  });
});

describe("blockHashToRecord", () => {
  test("the same hash before and after the call is recorded; a block replaced meanwhile (a reorg) fails the call retryably, naming both hashes", () => {
    expect(blockHashToRecord(SCOPE, { ok: true, hash: A }, { ok: true, hash: A })).toEqual({ ok: true, hash: A });
    const r = blockHashToRecord(SCOPE, { ok: true, hash: A }, { ok: true, hash: B });
    expect(r).toMatchObject({ ok: false, retryable: true });
    expect(!r.ok && r.message).toBe(`block 12 of chain eth changed while the call ran (hash ${A}, then ${B}: a reorganisation); the call is retried`);
    expect(blockHashToRecord(SCOPE, { ok: false, message: "x", retryable: true }, { ok: true, hash: A })).toEqual({ ok: false, message: "x", retryable: true });
  });
});
