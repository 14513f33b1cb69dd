import { describe, expect, test } from "bun:test";
import { handOff } from "./block-handoff";
import { type SuspensionRequest } from "./protocol";
import { RawJson } from "../json/raw-json";

const io: SuspensionRequest = { kind: "io", backend: "localtestservice", op: "eth_getBlockByNumber", params: { chain: "ethereum", number: 7 } };
const text = '{"number":"0x7"}';
const spanned = (load: () => Uint8Array = () => new TextEncoder().encode(text)) => new RawJson({ span: { file: "8:42", offset: 1000, length: text.length }, load });

describe("handOff: how an answer reaches one executor", () => {
  test("a final block goes by offset and length to an executor that reads that very store file, and is never read", () => {
    let reads = 0;
    const h = handOff({ ok: true, value: spanned(() => (reads++, new Uint8Array())) }, io, "8:42");
    expect(h).toEqual({ result: { ok: true, mapped: [1000, text.length], store: "8:42" }, via: "mapped" });
    expect(reads).toBe(0);
  });

  test("as bytes to an executor that reads another file or none, or that asked for bytes", () => {
    for (const [reads, req] of [["9:42", io], [null, io], ["8:42", { ...io, bytes: true }]] as const) {
      const h = handOff({ ok: true, value: spanned() }, req, reads);
      expect(h.via).toBe("bytes");
      expect(h.result.ok && "value" in h.result && h.result.value instanceof RawJson && h.result.value.span === null && h.result.value.text).toBe(text);
    }
  });

  test("a block that cannot be read (the store was truncated) becomes the request's error, naming the cause", () => {
    const h = handOff({ ok: true, value: spanned(() => { throw new Error("short read of block 7 from the block store (0 of 16 bytes)"); }) }, io, null);
    expect(h).toEqual({ result: { ok: false, error: { type: "BackendFailed", message: "localtestservice.eth_getBlockByNumber: short read of block 7 from the block store (0 of 16 bytes)" } }, via: "bytes" });
  });

  test("other answers pass unchanged", () => {
    const plain = { ok: true as const, value: new RawJson(text) };
    expect(handOff(plain, io, "8:42")).toEqual({ result: plain, via: null });
    const failed = { ok: false as const, error: { type: "NotFound", message: "no" } };
    expect(handOff(failed, io, "8:42")).toEqual({ result: failed, via: null });
  });
});
