import { afterAll, describe, expect, test } from "bun:test";
import { fstatSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RawJson, type JsonValue } from "../../json/raw-json";
import { localtestserviceBackend } from "../../io/backends/localtestservice-backend";
import { BackendRegistry } from "../../io/backends/backend-registry";
import { IoSubsystem } from "../../io/io-subsystem";
import { ioConfigFrom, ioVars } from "../../io/io-config";
import { loadEnvConfig } from "../../../common/config/env-config";
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
    // Outside the range, another chain, or hashes only: generated as before (on the generator thread, as JSON).
    const generated = async (params: JsonValue) => ((await op.handle(params)) as RawJson).parse();
    expect(await generated({ chain: "ethereum", number: 2000 })).toEqual(chain.block(2000, true) as never);
    expect(await generated({ chain: "base", number: 1010 })).toEqual(new SyntheticChain("base").block(1010, true) as never);
    expect(await generated({ chain: "ethereum", number: 1010, full: false })).toEqual(chain.block(1010, false) as never);
    // A head below the stored range still hides the blocks above it.
    expect(((await localtestserviceBackend({ store, head: 1005 }).ops.eth_getBlockByNumber!.handle({ chain: "ethereum", number: 1010 })) as RawJson).parse()).toBeNull();
    store.close();
  });

  test("a range whose last block fills the writer's chunk exactly still has one line per block (no empty line at the end)", () => {
    // The writer flushes after the block that takes its chunk past 8 MiB: end the range on that block.
    let chars = 0;
    let last = 0;
    while ((chars += JSON.stringify(chain.block(last, true)).length) <= 8 << 20) last++;
    const p = join(dir, "chunk-end.blocks");
    writeBlockStore(p, chain, 0, last);
    const store = BlockTextStore.open(p);
    expect(store.header.count).toBe(last + 1);
    expect(store.read(last).text).toBe(JSON.stringify(chain.block(last, true)));
    store.close();
  });

  test("a block is its span in the file (offset, length, the file's identity), read only when its bytes are asked for", () => {
    const store = BlockTextStore.open(path);
    const st = fstatSync(store.fd, { bigint: true });
    expect(store.identity).toBe(`${st.dev}:${st.ino}`);
    const raw = store.read(1010);
    expect(raw.span).not.toBeNull();
    const { file, offset, length } = raw.span!;
    expect(file).toBe(store.identity);
    expect(readFileSync(path).subarray(offset, offset + length).toString()).toBe(JSON.stringify(chain.block(1010, true)));
    expect(raw.byteLength).toBe(length);
    const plain = raw.withoutSpan();
    expect(plain.span).toBeNull();
    expect(plain.text).toBe(JSON.stringify(chain.block(1010, true)));
    store.close();
  });

  test("a store truncated under the Worker fails the read of a cut block with the cause; a re-render replaces the file instead of truncating it", () => {
    const p = join(dir, "shrinking.blocks");
    writeBlockStore(p, chain, 0, 9);
    const store = BlockTextStore.open(p);
    truncateSync(p, store.read(5).span!.offset + 10);
    expect(() => store.read(7).bytes).toThrow(/short read of block 7 from the block store \(0 of \d+ bytes\): the file was truncated/);
    expect(store.read(2).text).toBe(JSON.stringify(chain.block(2, true)));
    const before = statSync(p).ino;
    writeBlockStore(p, chain, 0, 9);
    expect(statSync(p).ino).not.toBe(before);
    store.close();
  });

  test("only final blocks leave the IO subsystem with their span; a block that may still change is read and sent as bytes", async () => {
    const store = BlockTextStore.open(path);
    // Head 1049, finality depth 12: 1037 is the last final block.
    const io = new IoSubsystem(new BackendRegistry().register(localtestserviceBackend({ store, head: 1049 })), { ...ioConfigFrom(loadEnvConfig(ioVars, {})).io, finalityDepth: 12 });
    const t = io.forTask("t");
    const valueOf = async (n: number) => {
      const r = await t.call("localtestservice", "eth_getBlockByNumber", { chain: "ethereum", number: n });
      if (!r.answer.ok) throw new Error(r.answer.error.message);
      return r.answer.value as RawJson;
    };
    // The chain's first answer waits for its head (being fetched) instead of going as bytes.
    expect((await valueOf(1001)).span).toMatchObject({ file: store.identity });
    const final = await valueOf(1037);
    expect(final.span).toMatchObject({ file: store.identity });
    for (const n of [1038, 1049]) {
      const head = await valueOf(n);
      expect(head.span).toBeNull();
      expect(head.text).toBe(JSON.stringify(chain.block(n, true)));
    }
    t.end();
    store.close();
  });
});
