import { describe, expect, test } from "bun:test";
import { encodeFrame, FrameDecoder, FrameError } from "./frame-codec";
import { RawJson } from "./protocol";

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
});
