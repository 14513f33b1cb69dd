/**
 * The executor wire format: a 4-byte big-endian length, then that many bytes of UTF-8 JSON
 * (executor-py/PROTOCOL.md). One object per frame.
 */

export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

import { RawJson } from "./protocol";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// A placeholder no user string can spell: it carries a per-process random nonce.
const RAW_MARK = `\u0000rawjson-${crypto.randomUUID()}-`;

function stringifyWithRaw(message: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(message, (_key, value: unknown) => {
    if (value instanceof RawJson) {
      raws.push(value.text);
      return RAW_MARK + (raws.length - 1);
    }
    return value;
  });
  if (raws.length === 0) return text;
  // JSON.stringify escapes the NUL of the mark as \u0000; match the serialised form.
  const mark = JSON.stringify(RAW_MARK).slice(1, -1);
  const parts = text.split(`"${mark}`);
  let out = parts[0]!;
  for (let i = 1; i < parts.length; i++) {
    const part = parts[i]!;
    const end = part.indexOf('"');
    out += raws[Number(part.slice(0, end))]! + part.slice(end + 1);
  }
  return out;
}

/**
 * encodeFrame serialises one message into a frame. Pass `withRaw` when the message may hold
 * RawJson values (only ResumeCall does); the plain path stays a bare JSON.stringify.
 */
export function encodeFrame(message: unknown, withRaw = false): Uint8Array {
  const body = encoder.encode(withRaw ? stringifyWithRaw(message) : JSON.stringify(message));
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
        out.push(JSON.parse(text));
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
