import { parseExactJson } from "../../common/json/exact-json";
/**
 * The executor wire format: a 4-byte big-endian length, then that many bytes of UTF-8 JSON
 * (executor-py/PROTOCOL.md). One object per frame.
 */

import { RawJson } from "../json/raw-json";

export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// A placeholder no user string can spell: it carries a per-process random nonce.
const RAW_MARK = `\u0000rawjson-${crypto.randomUUID()}-`;
// JSON.stringify escapes the NUL of the mark as \u0000: the form to look for in its output.
const RAW_MARK_JSON = `"${JSON.stringify(RAW_MARK).slice(1, -1)}`;

/**
 * Raw pieces at least this long go out by reference (the frame is a list of parts): a function's
 * 30 MiB source framed once and sent to every executor, a block's bytes spliced in uncopied.
 */
const RAW_BY_REFERENCE_BYTES = 64 * 1024;

/**
 * textFrame encodes a JSON text into a frame: its UTF-8 written straight after the 4-byte length
 * (one allocation, no intermediate copy: 2.3x faster for a call's frame than encode-then-copy).
 */
function textFrame(text: string): Buffer {
  const n = Buffer.byteLength(text, "utf8");
  const frame = Buffer.allocUnsafe(4 + n);
  frame.writeUInt32BE(n, 0);
  // allocUnsafe memory is not zeroed: every byte must be written, or old Worker memory would reach an executor.
  if (frame.write(text, 4, "utf8") !== n) throw new Error("frame encoding wrote fewer bytes than measured");
  return frame;
}

/** encodeWithRaw serialises around RawJson values; returns the frame's parts, large raw bytes by reference. */
function encodeWithRaw(message: unknown): Uint8Array[] {
  const raws: RawJson[] = [];
  const text = JSON.stringify(message, (_key, value: unknown) => {
    if (value instanceof RawJson) {
      raws.push(value);
      return RAW_MARK + (raws.length - 1);
    }
    return value;
  });
  if (raws.length === 0) return [textFrame(text)];
  const pieces = text.split(RAW_MARK_JSON);
  const parts: Uint8Array[] = [encoder.encode(pieces[0]!)];
  for (let i = 1; i < pieces.length; i++) {
    const piece = pieces[i]!;
    const end = piece.indexOf('"');
    parts.push(raws[Number(piece.slice(0, end))]!.bytes, encoder.encode(piece.slice(end + 1)));
  }
  return joinSmall(parts);
}

/** joinSmall puts the frame's length first and joins every run of small parts; large parts stay as they are. */
function joinSmall(body: readonly Uint8Array[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let run: Uint8Array[] = [new Uint8Array(4)];
  let total = 0;
  for (const p of body) {
    total += p.byteLength;
    if (p.byteLength < RAW_BY_REFERENCE_BYTES) {
      run.push(p);
      continue;
    }
    if (run.length > 0) out.push(concatBytes(run));
    out.push(p);
    run = [];
  }
  if (run.length > 0) out.push(concatBytes(run));
  new DataView(out[0]!.buffer, out[0]!.byteOffset, 4).setUint32(0, total, false);
  return out;
}

/** concatBytes: the parts as one buffer (the part itself when there is only one). */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const data = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let off = 0;
  for (const p of parts) {
    data.set(p, off);
    off += p.byteLength;
  }
  return data;
}

/**
 * encodeFrameParts serialises one message into a frame given as parts to write in order. Pass
 * `withRaw` when the message may hold RawJson values (ResumeCall's answers, ExecuteCall's shared
 * source); the plain path is one JSON.stringify written into one buffer.
 */
export function encodeFrameParts(message: unknown, withRaw = false): Uint8Array[] {
  if (withRaw) return encodeWithRaw(message);
  return [textFrame(JSON.stringify(message))];
}

/** encodeFrame is encodeFrameParts joined into one buffer. */
export function encodeFrame(message: unknown, withRaw = false): Uint8Array {
  return concatBytes(encodeFrameParts(message, withRaw));
}

export class FrameError extends Error {}

/** A decoder's buffer past this size is dropped once empty (one large frame should not pin its size). */
const DECODER_KEEP_BYTES = 1024 * 1024;

/**
 * FrameDecoder takes the bytes of a stream in whatever chunks they arrive and hands back each
 * complete message. Frames whole in a chunk are decoded in place; the bytes of an incomplete one
 * are gathered in one buffer, grown to the frame's size once its length is known, so that a frame
 * arriving in many chunks is copied once (joining buffer and chunk on every chunk cost a 32 MiB
 * frame in 64 KiB chunks 2.5 s of CPU: quadratic).
 */
export class FrameDecoder {
  private buf = new Uint8Array(0);
  /** Bytes of `buf` in use: the start of a frame, never a whole one. */
  private used = 0;
  /** Bytes copied into `buf` so far (gathering and growing): about the bytes of frames that arrived split. */
  copiedBytes = 0;

  /** push adds a chunk and returns every message it completes, in order. */
  push(chunk: Uint8Array): unknown[] {
    const out: unknown[] = [];
    let data = chunk;
    if (this.used > 0) {
      // Complete the buffered frame from the chunk first.
      const take = this.append(chunk);
      if (take < 0) return out;
      this.decodeOne(this.buf.subarray(0, this.used), out);
      this.used = 0;
      if (this.buf.length > DECODER_KEEP_BYTES) this.buf = new Uint8Array(0);
      data = chunk.subarray(take);
    }
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    let pos = 0;
    while (data.length - pos >= 4) {
      const len = frameLength(view, pos);
      if (data.length - pos - 4 < len) break;
      this.decodeOne(data.subarray(pos, pos + 4 + len), out);
      pos += 4 + len;
    }
    if (pos < data.length) this.append(data.subarray(pos));
    return out;
  }

  /**
   * append adds bytes to the buffered frame, taking only what that frame needs: returns how many
   * bytes of `bytes` completed it, or -1 when it is still incomplete (all were taken).
   */
  private append(bytes: Uint8Array): number {
    let need = this.used >= 4 ? this.frameSize() : 4;
    let taken = 0;
    for (;;) {
      const take = Math.min(need - this.used, bytes.length - taken);
      this.reserve(need);
      this.buf.set(bytes.subarray(taken, taken + take), this.used);
      this.copiedBytes += take;
      this.used += take;
      taken += take;
      if (this.used < need) return -1;
      if (need > 4 || this.frameSize() === 4) return taken;
      need = this.frameSize(); // the length is known now: gather the body
    }
  }

  /** frameSize: the buffered frame's whole size (length included), once 4 bytes are in. */
  private frameSize(): number {
    return 4 + frameLength(new DataView(this.buf.buffer, this.buf.byteOffset, 4), 0);
  }

  private reserve(size: number): void {
    if (this.buf.length >= size) return;
    const grown = new Uint8Array(Math.max(size, Math.min(this.buf.length * 2, 4 + MAX_FRAME_BYTES)));
    grown.set(this.buf.subarray(0, this.used));
    this.copiedBytes += this.used;
    this.buf = grown;
  }

  private decodeOne(frame: Uint8Array, out: unknown[]): void {
    const text = decoder.decode(frame.subarray(4));
    try {
      out.push(parseExactJson(text));
    } catch (e) {
      throw new FrameError(`frame is not JSON: ${(e as Error).message}`);
    }
  }

  /** Bytes received but not yet a whole frame. */
  get pending(): number {
    return this.used;
  }
}

/** frameLength reads a frame's length at `pos`, refusing one over MAX_FRAME_BYTES. */
function frameLength(view: DataView, pos: number): number {
  const len = view.getUint32(pos, false);
  if (len > MAX_FRAME_BYTES) throw new FrameError(`frame of ${len} bytes exceeds the ${MAX_FRAME_BYTES}-byte limit`);
  return len;
}
