/**
 * RLP (Ethereum's Recursive Length Prefix encoding, Yellow Paper appendix B) for the local test
 * chain's hashes: a block hash is Keccak-256 of its RLP header, a type-2 transaction hash is
 * Keccak-256 of 0x02 ++ RLP(fields). Items are byte strings or lists; encoding measures first and
 * writes once into one buffer (a block encodes hundreds of items).
 */

export type RlpItem = Uint8Array | readonly RlpItem[];

function lengthOfLength(n: number): number {
  let k = 0;
  for (let x = n; x > 0; x = Math.floor(x / 256)) k++;
  return k;
}

/** The encoded size of an item's payload plus its prefix. */
function encodedLength(item: RlpItem, sizes: number[]): number {
  if (item instanceof Uint8Array) {
    if (item.length === 1 && item[0]! < 0x80) return 1;
    return item.length + (item.length < 56 ? 1 : 1 + lengthOfLength(item.length));
  }
  const at = sizes.length;
  sizes.push(0);
  let payload = 0;
  for (const x of item) payload += encodedLength(x, sizes);
  sizes[at] = payload;
  return payload + (payload < 56 ? 1 : 1 + lengthOfLength(payload));
}

function writeHeader(out: Uint8Array, at: number, short: number, long: number, n: number): number {
  if (n < 56) {
    out[at] = short + n;
    return at + 1;
  }
  const k = lengthOfLength(n);
  out[at] = long + k;
  for (let i = k; i >= 1; i--, n = Math.floor(n / 256)) out[at + i] = n % 256;
  return at + 1 + k;
}

function write(item: RlpItem, out: Uint8Array, at: number, sizes: number[], next: { i: number }): number {
  if (item instanceof Uint8Array) {
    if (item.length === 1 && item[0]! < 0x80) {
      out[at] = item[0]!;
      return at + 1;
    }
    at = writeHeader(out, at, 0x80, 0xb7, item.length);
    out.set(item, at);
    return at + item.length;
  }
  at = writeHeader(out, at, 0xc0, 0xf7, sizes[next.i++]!);
  for (const x of item) at = write(x, out, at, sizes, next);
  return at;
}

/** rlpEncode encodes an item (a byte string or a list of items). */
export function rlpEncode(item: RlpItem): Uint8Array {
  const sizes: number[] = [];
  const out = new Uint8Array(encodedLength(item, sizes));
  write(item, out, 0, sizes, { i: 0 });
  return out;
}

/** dataBytes: the bytes of 0x-prefixed hex data (a hash, an address, call data). */
export function dataBytes(hex: string): Uint8Array {
  return Buffer.from(hex.slice(2), "hex");
}

/** quantityBytes: a JSON-RPC quantity as RLP wants an integer: big-endian, no leading zero bytes (zero is empty). */
export function quantityBytes(hex: string): Uint8Array {
  if (hex === "0x0") return new Uint8Array(0);
  const digits = hex.length % 2 === 0 ? hex.slice(2) : `0${hex.slice(2)}`;
  return Buffer.from(digits, "hex");
}
