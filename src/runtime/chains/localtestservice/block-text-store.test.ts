import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RawJson } from "../../executor/protocol";
import { localtestserviceBackend } from "../../io/backends/localtestservice-backend";
import { BlockStoreError, BlockTextStore, writeBlockStore } from "./block-text-store";
import { SyntheticChain } from "./synthetic-chain";

const dir = mkdtempSync(join(tmpdir(), "blockx-block-store-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("BlockTextStore", () => {
  const chain = new SyntheticChain("ethereum");
  const path = join(dir, "eth.blocks");
  writeBlockStore(path, chain, 1000, 1049);

  test("serves every rendered block as exactly the generator's JSON text", () => {
    const store = BlockTextStore.open(path);
    expect(store.header).toEqual({ blockxBlockStore: 1, chain: "ethereum", first: 1000, count: 50 });
    for (let n = 1000; n <= 1049; n++) expect(store.read(n).text).toBe(JSON.stringify(chain.block(n, true)));
    expect([store.has("ethereum", 999), store.has("ethereum", 1000), store.has("ethereum", 1049), store.has("ethereum", 1050), store.has("base", 1000)]).toEqual([false, true, true, false, false]);
    store.close();
  });

  test("the file past its header is plain JSON lines, one block per line in order", () => {
    const lines = readFileSync(path, "utf8").trimEnd().split("\n");
    expect(lines.length).toBe(51);
    expect(lines.slice(1).map((l) => parseInt((JSON.parse(l) as { number: string }).number, 16))).toEqual(Array.from({ length: 50 }, (_, i) => 1000 + i));
  });

  test("a truncated store, a file that is not a store, and a missing file are refused with the reason", () => {
    const cut = join(dir, "cut.blocks");
    writeBlockStore(cut, chain, 0, 9);
    truncateSync(cut, readFileSync(cut).length - 100);
    expect(() => BlockTextStore.open(cut)).toThrow(/truncated or damaged: header says 10 blocks, file has 9 lines/);
    const notStore = join(dir, "other.jsonl");
    writeFileSync(notStore, '{"number":"0x1"}\n');
    expect(() => BlockTextStore.open(notStore)).toThrow(BlockStoreError);
    expect(() => BlockTextStore.open(notStore)).toThrow(/is not a block store/);
    expect(() => BlockTextStore.open(join(dir, "missing"))).toThrow(/cannot open block store/);
  });

  test("the localtestservice backend serves stored full blocks as RawJson and generates the rest", async () => {
    const store = BlockTextStore.open(path);
    const op = localtestserviceBackend({ store }).ops.eth_getBlockByNumber!;
    const stored = await op.handle({ chain: "ethereum", number: 1010 });
    expect(stored).toBeInstanceOf(RawJson);
    expect((stored as RawJson).parse()).toEqual(chain.block(1010, true) as never);
    // Outside the range, another chain, or hashes only: generated as before.
    expect(await op.handle({ chain: "ethereum", number: 2000 })).toEqual(chain.block(2000, true) as never);
    expect(await op.handle({ chain: "base", number: 1010 })).toEqual(new SyntheticChain("base").block(1010, true) as never);
    expect(await op.handle({ chain: "ethereum", number: 1010, full: false })).toEqual(chain.block(1010, false) as never);
    // A head below the stored range still hides the blocks above it.
    expect(await localtestserviceBackend({ store, head: 1005 }).ops.eth_getBlockByNumber!.handle({ chain: "ethereum", number: 1010 })).toBeNull();
    store.close();
  });
});
