/**
 * Ethereum JSON-RPC result shapes (post-merge, EIP-1559 / Shanghai era) as returned by
 * `eth_getBlockByNumber`, `eth_getBlockReceipts` and `eth_getLogs`.
 *
 * Encoding conventions (identical to a real node):
 * - quantities: `0x`-prefixed lowercase hex without leading zeros, `"0x0"` for zero;
 * - 32-byte hashes: `0x` + 64 lowercase hex chars;
 * - addresses: `0x` + 40 lowercase hex chars;
 * - data: `0x` + an even number of lowercase hex chars.
 */

/** A `0x`-prefixed hex string (quantity, hash, address or data, see the conventions above). */
export type Hex = string;

export interface EthLog {
  address: Hex;
  topics: Hex[];
  data: Hex;
  blockNumber: Hex;
  transactionHash: Hex;
  transactionIndex: Hex;
  blockHash: Hex;
  logIndex: Hex;
  removed: boolean;
}

/** A type-2 (EIP-1559) transaction as embedded in a block with full transactions. */
export interface EthTransaction {
  blockHash: Hex;
  blockNumber: Hex;
  from: Hex;
  gas: Hex;
  gasPrice: Hex;
  maxFeePerGas: Hex;
  maxPriorityFeePerGas: Hex;
  hash: Hex;
  input: Hex;
  nonce: Hex;
  to: Hex | null;
  transactionIndex: Hex;
  value: Hex;
  type: Hex;
  accessList: unknown[];
  chainId: Hex;
  v: Hex;
  r: Hex;
  s: Hex;
  yParity: Hex;
}

export interface EthReceipt {
  blockHash: Hex;
  blockNumber: Hex;
  contractAddress: Hex | null;
  cumulativeGasUsed: Hex;
  effectiveGasPrice: Hex;
  from: Hex;
  gasUsed: Hex;
  logs: EthLog[];
  logsBloom: Hex;
  status: Hex;
  to: Hex | null;
  transactionHash: Hex;
  transactionIndex: Hex;
  type: Hex;
}

export interface EthWithdrawal {
  index: Hex;
  validatorIndex: Hex;
  address: Hex;
  amount: Hex;
}

export interface EthBlock<TX = EthTransaction | Hex> {
  number: Hex;
  hash: Hex;
  parentHash: Hex;
  nonce: Hex;
  sha3Uncles: Hex;
  logsBloom: Hex;
  transactionsRoot: Hex;
  stateRoot: Hex;
  receiptsRoot: Hex;
  miner: Hex;
  difficulty: Hex;
  totalDifficulty: Hex;
  extraData: Hex;
  size: Hex;
  gasLimit: Hex;
  gasUsed: Hex;
  timestamp: Hex;
  transactions: TX[];
  uncles: Hex[];
  baseFeePerGas: Hex;
  mixHash: Hex;
  withdrawals: EthWithdrawal[];
  withdrawalsRoot: Hex;
}

/** `eth_getLogs` filter over an inclusive block range (numbers, not hex tags). */
export interface EthLogFilter {
  fromBlock: number;
  toBlock: number;
  /** One address or any of several (case-insensitive); an empty list does not filter (geth). */
  address?: string | string[];
  /** Positional; `null` (or `[]`) is a wildcard, an array is an OR of alternatives. */
  topics?: (string | string[] | null)[];
}
