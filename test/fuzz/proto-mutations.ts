import { mulberry32 } from "../support/mulberry32";

/**
 * Hostile protobuf request bodies, pure and seeded: the same seed gives the same cases. Each kind
 * attacks one thing a decoder or a handler must bound or refuse.
 */
export const MUTATION_KINDS = [
  "random", // random bytes of random length: what a confused or hostile peer sends
  "truncated", // a valid message cut short (a length prefix running past the end)
  "flipped", // a valid message with a few bytes changed
  "wrongWireType", // a known field sent with another wire type
  "hugeLength", // a length prefix claiming gigabytes
  "deepNesting", // a field nested thousands of levels deep (a recursive decoder's stack)
  "oversizedString", // one string field of megabytes
  "manyRepeated", // one field repeated a hundred thousand times
  "unknownFields", // a valid message with unknown fields of every wire type appended
  "invalidUtf8", // string fields holding bytes that are not UTF-8
  "hostileText", // string fields holding text a handler may mishandle: NUL, paths, JSON, huge numbers
] as const;
export type MutationKind = (typeof MUTATION_KINDS)[number];

export interface FuzzCase {
  readonly kind: MutationKind;
  readonly bytes: Buffer;
}

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

const tag = (field: number, wire: number) => varint(field * 8 + wire);
const lengthDelimited = (field: number, body: readonly number[]) => [...tag(field, 2), ...varint(body.length), ...body];

const HOSTILE_TEXT = [
  "\u0000",
  "../../../../etc/passwd",
  "/proc/self/environ",
  "{".repeat(5_000),
  "[".repeat(20_000) + "]".repeat(20_000),
  "1".repeat(400),
  "-0",
  "NaN",
  "\u202e\u0000\uffff",
  "'; DROP TABLE x; --",
  "%s%n%x",
  "a".repeat(70_000),
  "{\"__proto__\":{\"polluted\":1}}",
];

/**
 * protoCases yields `count` hostile bodies built from `seeds` (valid encodings of the method's
 * request: the mutations start from them), the kinds taken in turn so a short budget sees each.
 */
export function* protoCases(seed: number, seeds: readonly Buffer[], count: number): Generator<FuzzCase> {
  const rnd = mulberry32(seed);
  const int = (n: number) => Math.floor(rnd() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const base = () => (seeds.length > 0 ? pick(seeds) : Buffer.alloc(0));
  const field = () => 1 + int(12);
  for (let i = 0; i < count; i++) {
    const kind = MUTATION_KINDS[i % MUTATION_KINDS.length]!;
    let bytes: number[];
    switch (kind) {
      case "random":
        bytes = Array.from({ length: int(2_048) }, () => int(256));
        break;
      case "truncated": {
        const b = base();
        bytes = [...b.subarray(0, b.length > 1 ? int(b.length - 1) + 1 : 0)];
        if (bytes.length === 0) bytes = lengthDelimited(field(), [1, 2, 3]).slice(0, 3);
        break;
      }
      case "flipped": {
        bytes = [...base()];
        if (bytes.length === 0) bytes = [0x0a, 0x02, 0x41, 0x41];
        for (let k = 1 + int(8); k > 0; k--) bytes[int(bytes.length)] = int(256);
        break;
      }
      case "wrongWireType":
        // Fields sent as a varint, a fixed64, a group start and a fixed32 where strings or messages are expected.
        bytes = [...tag(field(), 0), ...varint(int(1 << 30)), ...tag(field(), 1), 1, 2, 3, 4, 5, 6, 7, 8, ...tag(field(), 3), ...tag(field(), 5), 1, 2, 3, 4];
        break;
      case "hugeLength":
        bytes = [...tag(field(), 2), ...varint(2 ** 31 - 1 - int(1_000)), 0x41, 0x41];
        break;
      case "deepNesting": {
        // Each level a length-delimited field holding the next: built from the inside out.
        let body: number[] = [];
        const f = field();
        for (let d = 0; d < 3_000 + int(3_000); d++) body = lengthDelimited(f, body);
        bytes = body;
        break;
      }
      case "oversizedString":
        bytes = [...base(), ...lengthDelimited(field(), Array.from({ length: (2 + int(6)) << 20 }, () => 0x61))];
        break;
      case "manyRepeated": {
        const one = lengthDelimited(field(), [0x78]);
        bytes = [...base()];
        for (let k = 0; k < 100_000; k++) bytes.push(...one);
        break;
      }
      case "unknownFields":
        bytes = [...base(), ...tag(500 + int(10_000), 0), 1, ...tag(600 + int(10_000), 2), 3, 1, 2, 3, ...tag(700, 5), 0, 0, 0, 0, ...tag(800, 1), 0, 0, 0, 0, 0, 0, 0, 0];
        break;
      case "invalidUtf8":
        bytes = [...base(), ...lengthDelimited(field(), [0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80, 0xf8, 0x88, 0x80, 0x80, 0x80])];
        break;
      case "hostileText":
        bytes = [...base(), ...lengthDelimited(field(), [...Buffer.from(pick(HOSTILE_TEXT), "utf8")])];
        break;
    }
    yield { kind, bytes: Buffer.from(bytes) };
  }
}
