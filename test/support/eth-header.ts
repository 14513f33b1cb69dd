import { keccak256, toRlp, type Hex } from "viem";

/** An RLP integer: big-endian without leading zero bytes (zero is the empty string). */
const int = (q: string): Hex => (/^0x0*$/.test(q) ? "0x" : (`0x${q.length % 2 ? "0" : ""}${q.slice(2)}` as Hex));

type Header = object;

/**
 * headerFields: a block header's RLP fields in the Yellow Paper's order, written here from the
 * spec with viem's RLP (not the local chain's encoder): the 15 fields of Frontier, then each later
 * fork's field when the block has it (baseFeePerGas: London, withdrawalsRoot: Shanghai,
 * blobGasUsed, excessBlobGas, parentBeaconBlockRoot: Cancun).
 */
export function headerFields(b: Header): Hex[] {
  const r = b as Record<string, unknown>;
  const d = (k: string) => r[k] as Hex;
  const fields: Hex[] = [
    d("parentHash"), d("sha3Uncles"), d("miner"), d("stateRoot"), d("transactionsRoot"), d("receiptsRoot"), d("logsBloom"),
    int(r.difficulty as string), int(r.number as string), int(r.gasLimit as string), int(r.gasUsed as string), int(r.timestamp as string),
    d("extraData"), d("mixHash"), d("nonce"),
  ];
  if (r.baseFeePerGas !== undefined) fields.push(int(r.baseFeePerGas as string));
  if (r.withdrawalsRoot !== undefined) fields.push(d("withdrawalsRoot"));
  if (r.blobGasUsed !== undefined) fields.push(int(r.blobGasUsed as string), int(r.excessBlobGas as string));
  if (r.parentBeaconBlockRoot !== undefined) fields.push(d("parentBeaconBlockRoot"));
  return fields;
}

/** recomputedBlockHash: Keccak-256 of the block's RLP header. */
export function recomputedBlockHash(b: Header): Hex {
  return keccak256(toRlp(headerFields(b)));
}
