import { describe, expect, test } from "bun:test";
import { encodeFrame, encodeFrameParts, FrameDecoder, FrameError } from "./frame-codec";
import { RawJson } from "../json/raw-json";

describe("frame codec", () => {
  test("a frame is a 4-byte big-endian length and UTF-8 JSON", () => {
    const f = encodeFrame({ type: "Ping", seq: 1, s: "é" });
    const body = new TextEncoder().encode(JSON.stringify({ type: "Ping", seq: 1, s: "é" }));
    expect([...f.subarray(0, 4)]).toEqual([0, 0, 0, body.length]);
    expect(new TextDecoder().decode(f.subarray(4))).toBe(JSON.stringify({ type: "Ping", seq: 1, s: "é" }));
  });

  test("messages split at every byte boundary and glued together come out whole and in order", () => {
    const msgs = [{ a: 1 }, { b: "x".repeat(300) }, { c: [1, 2, 3] }];
    const all = new Uint8Array(msgs.map((m) => encodeFrame(m)).reduce((n, f) => n + f.length, 0));
    let off = 0;
    for (const f of msgs.map((m) => encodeFrame(m))) {
      all.set(f, off);
      off += f.length;
    }
    for (const step of [1, 3, 7, all.length]) {
      const d = new FrameDecoder();
      const out: unknown[] = [];
      for (let i = 0; i < all.length; i += step) out.push(...d.push(all.subarray(i, i + step)));
      expect(out).toEqual(msgs);
      expect(d.pending).toBe(0);
    }
  });

  test("an oversized length or a non-JSON body is a FrameError", () => {
    expect(() => new FrameDecoder().push(new Uint8Array([0xff, 0xff, 0xff, 0xff]))).toThrow(FrameError);
    const bad = new Uint8Array([0, 0, 0, 2, 0x7b, 0x7b]);
    expect(() => new FrameDecoder().push(bad)).toThrow("not JSON");
  });

  test("RawJson values are spliced in as they are, next to strings that look like the placeholder", () => {
    const raw = new RawJson('{"number":"0x10","transactions":[{"a":1}]}');
    const msg = { type: "ResumeCall", callId: "c1", results: [{ ok: true, value: raw }, { ok: true, value: "\u0000rawjson-x-0" }, { ok: true, value: new RawJson("[]") }], ioMs: 1 };
    const out = new FrameDecoder().push(encodeFrame(msg, true));
    expect(out).toEqual([{ type: "ResumeCall", callId: "c1", results: [{ ok: true, value: { number: "0x10", transactions: [{ a: 1 }] } }, { ok: true, value: "\u0000rawjson-x-0" }, { ok: true, value: [] }], ioMs: 1 }]);
  });

  test("text of every kind is framed byte for byte: accents, emoji, lone surrogates (escaped by JSON.stringify), NUL", () => {
    const msg = { type: "Ping", s: "é ☃ 😀 \ud800 \udfff \u0000 end", n: [1.5, -0, 2 ** 40] };
    const f = encodeFrame(msg);
    const body = new TextEncoder().encode(JSON.stringify(msg));
    expect(new DataView(f.buffer, f.byteOffset, 4).getUint32(0, false)).toBe(body.length);
    expect([...f.subarray(4)]).toEqual([...body]);
    expect(new FrameDecoder().push(f)).toEqual([JSON.parse(JSON.stringify(msg))]);
  });

  test("a large RawJson goes by reference among the frame's parts; small pieces are joined; the parts make the same frame", () => {
    const big = new RawJson(JSON.stringify("s".repeat(100_000)));
    const small = new RawJson('{"a":1}');
    const msg = { type: "ExecuteCall", callId: "c1", digest: "d", source: big, entry: "main", args: small, budgetMs: 1 };
    const parts = encodeFrameParts(msg, true);
    expect(parts.length).toBe(3);
    expect(parts[1]).toBe(big.bytes); // not copied
    expect(new FrameDecoder().push(encodeFrame(msg, true))).toEqual([{ type: "ExecuteCall", callId: "c1", digest: "d", source: "s".repeat(100_000), entry: "main", args: { a: 1 }, budgetMs: 1 }]);
    const decoder = new FrameDecoder();
    const out = parts.flatMap((p) => decoder.push(p));
    expect(out).toEqual(new FrameDecoder().push(encodeFrame(msg, true)));
  });

  test("a large frame in many chunks, between whole frames in the same chunks, comes out whole; nothing stays pending", () => {
    const msgs = [{ a: 1 }, { big: "b".repeat(3 << 20) }, { c: 2 }, { big: "é".repeat(1 << 20) }, { d: 3 }];
    const frames = msgs.map((m) => encodeFrame(m));
    const all = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
    let off = 0;
    for (const f of frames) {
      all.set(f, off);
      off += f.length;
    }
    for (const step of [65536, 4093, 1 << 20]) {
      const d = new FrameDecoder();
      const out: unknown[] = [];
      for (let i = 0; i < all.length; i += step) {
        out.push(...d.push(all.subarray(i, i + step)));
        expect(d.pending).toBeLessThan(4 + (3 << 20) + 1);
      }
      expect(out).toEqual(msgs);
      expect(d.pending).toBe(0);
      // Each byte of a split frame is copied about once (a few bytes more where a length itself was split), never again per chunk.
      expect(d.copiedBytes).toBeLessThanOrEqual(all.length);
    }
  });

  test("a chunk is not kept by reference: the caller may reuse its buffer", () => {
    const f = encodeFrame({ keep: "k".repeat(1000) });
    const d = new FrameDecoder();
    const chunk = new Uint8Array(f.subarray(0, 500));
    expect(d.push(chunk)).toEqual([]);
    chunk.fill(0x7b); // the caller reuses it
    expect(d.push(f.subarray(500))).toEqual([{ keep: "k".repeat(1000) }]);
  });

  test("a length over the limit split across chunks is a FrameError once its four bytes are in", () => {
    const d = new FrameDecoder();
    expect(d.push(new Uint8Array([0xff, 0xff]))).toEqual([]);
    expect(() => d.push(new Uint8Array([0xff, 0xff]))).toThrow(FrameError);
  });
});
