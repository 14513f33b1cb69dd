import { parseExactJson } from "../../common/json/exact-json";
/**
 * The executor wire format: a 4-byte big-endian length, then that many bytes of UTF-8 JSON
 * (executor-py/PROTOCOL.md). One object per frame.
 */

import { RawJson } from "./protocol";

export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// A placeholder no user string can spell: it carries a per-process random nonce.
const RAW_MARK = `\u0000rawjson-${crypto.randomUUID()}-`;
// JSON.stringify escapes the NUL of the mark as \u0000: the form to look for in its output.
const RAW_MARK_JSON = `"${JSON.stringify(RAW_MARK).slice(1, -1)}`;

/** frameOf prefixes a body with its length. */
function frameOf(parts: readonly Uint8Array[]): Uint8Array {
  const len = parts.reduce((n, p) => n + p.byteLength, 0);
  const frame = new Uint8Array(4 + len);
  new DataView(frame.buffer).setUint32(0, len, false);
  let off = 4;
  for (const p of parts) {
    frame.set(p, off);
    off += p.byteLength;
  }
  return frame;
}

/** encodeWithRaw serialises around RawJson values, then copies their bytes in between. */
function encodeWithRaw(message: unknown): Uint8Array {
  const raws: RawJson[] = [];
  const text = JSON.stringify(message, (_key, value: unknown) => {
    if (value instanceof RawJson) {
      raws.push(value);
      return RAW_MARK + (raws.length - 1);
    }
    return value;
  });
  if (raws.length === 0) return frameOf([encoder.encode(text)]);
  const pieces = text.split(RAW_MARK_JSON);
  const parts: Uint8Array[] = [encoder.encode(pieces[0]!)];
  for (let i = 1; i < pieces.length; i++) {
    const piece = pieces[i]!;
    const end = piece.indexOf('"');
    parts.push(raws[Number(piece.slice(0, end))]!.bytes, encoder.encode(piece.slice(end + 1)));
  }
  return frameOf(parts);
}

/**
 * encodeFrame serialises one message into a frame. Pass `withRaw` when the message may hold
 * RawJson values (only ResumeCall does); the plain path stays a bare JSON.stringify.
 */
export function encodeFrame(message: unknown, withRaw = false): Uint8Array {
  if (withRaw) return encodeWithRaw(message);
  const body = encoder.encode(JSON.stringify(message));
  const frame = new Uint8Array(4 + body.length);
  new DataView(frame.buffer).setUint32(0, body.length, false);
  frame.set(body, 4);
  return frame;
}

export class FrameError extends Error {}

/**
 * FrameDecoder takes the bytes of a stream in whatever chunks they arrive and hands back each
 * complete message. It copies only the unconsumed tail of a chunk.
 */
export class FrameDecoder {
  private buf = new Uint8Array(0);

  /** push adds a chunk and returns every message it completes, in order. */
  push(chunk: Uint8Array): unknown[] {
    let data: Uint8Array;
    if (this.buf.length === 0) data = chunk;
    else {
      data = new Uint8Array(this.buf.length + chunk.length);
      data.set(this.buf, 0);
      data.set(chunk, this.buf.length);
    }
    const out: unknown[] = [];
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    let pos = 0;
    while (data.length - pos >= 4) {
      const len = view.getUint32(pos, false);
      if (len > MAX_FRAME_BYTES) throw new FrameError(`frame of ${len} bytes exceeds the ${MAX_FRAME_BYTES}-byte limit`);
      if (data.length - pos - 4 < len) break;
      const text = decoder.decode(data.subarray(pos + 4, pos + 4 + len));
      pos += 4 + len;
      try {
        out.push(parseExactJson(text));
      } catch (e) {
        throw new FrameError(`frame is not JSON: ${(e as Error).message}`);
      }
    }
    this.buf = pos === data.length ? new Uint8Array(0) : data.slice(pos);
    return out;
  }

  /** Bytes received but not yet a whole frame. */
  get pending(): number {
    return this.buf.length;
  }
}
