/**
 * Ethereum's hashes of blocks and type-2 transactions, from their JSON-RPC shapes: what the
 * local test chain uses to give its blocks and transactions real hashes.
 */
import { keccak_256 } from "@noble/hashes/sha3.js";
import type { EthBlock, EthTransaction, Hex } from "./eth-types";
import { dataBytes, quantityBytes, rlpEncode, type RlpItem } from "./rlp";

export function keccakHex(bytes: Uint8Array): Hex {
  return `0x${Buffer.from(keccak_256(bytes)).toString("hex")}`;
}

/** The RLP list of a Shanghai block header (London's 16 fields plus withdrawalsRoot), in the Yellow Paper's order. */
export function blockHeaderRlp(b: Omit<EthBlock<unknown>, "hash" | "size" | "transactions" | "totalDifficulty" | "uncles" | "withdrawals">): Uint8Array {
  return rlpEncode([
    dataBytes(b.parentHash),
    dataBytes(b.sha3Uncles),
    dataBytes(b.miner),
    dataBytes(b.stateRoot),
    dataBytes(b.transactionsRoot),
    dataBytes(b.receiptsRoot),
    dataBytes(b.logsBloom),
    quantityBytes(b.difficulty),
    quantityBytes(b.number),
    quantityBytes(b.gasLimit),
    quantityBytes(b.gasUsed),
    quantityBytes(b.timestamp),
    dataBytes(b.extraData),
    dataBytes(b.mixHash),
    dataBytes(b.nonce),
    quantityBytes(b.baseFeePerGas),
    dataBytes(b.withdrawalsRoot),
  ]);
}

/** blockHeaderHash: a block's hash, Keccak-256 of its RLP header. */
export function blockHeaderHash(b: Parameters<typeof blockHeaderRlp>[0]): Hex {
  return keccakHex(blockHeaderRlp(b));
}

/** The fields of a type-2 transaction that its signed encoding carries. */
export type Type2Fields = Pick<EthTransaction, "chainId" | "nonce" | "maxPriorityFeePerGas" | "maxFeePerGas" | "gas" | "to" | "value" | "input" | "yParity" | "r" | "s">;

/** signedTransactionBytes: 0x02 ++ RLP([chainId, nonce, tip, maxFee, gas, to, value, input, accessList, yParity, r, s]) (EIP-1559, empty access list). */
export function signedTransactionBytes(tx: Type2Fields): Uint8Array {
  const body: RlpItem[] = [
    quantityBytes(tx.chainId),
    quantityBytes(tx.nonce),
    quantityBytes(tx.maxPriorityFeePerGas),
    quantityBytes(tx.maxFeePerGas),
    quantityBytes(tx.gas),
    tx.to === null ? new Uint8Array(0) : dataBytes(tx.to),
    quantityBytes(tx.value),
    dataBytes(tx.input),
    [],
    quantityBytes(tx.yParity),
    quantityBytes(tx.r),
    quantityBytes(tx.s),
  ];
  const rlp = rlpEncode(body);
  const out = new Uint8Array(rlp.length + 1);
  out[0] = 2;
  out.set(rlp, 1);
  return out;
}
