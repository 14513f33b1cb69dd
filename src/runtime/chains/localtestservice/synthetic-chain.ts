/**
 * Deterministic synthetic blockchain for the `localtestservice` backend.
 *
 * Block `n` of chain `c` is a pure function of `(c, n)` (plus the constructor options): every block is
 * generated independently, in any order, from a small seeded PRNG (sfc32) keyed by a hash of the chain
 * name and the block number. No `Math.random`, no clock, no shared mutable state that affects output.
 *
 * The JSON has exactly the shape of Ethereum JSON-RPC results (`eth_getBlockByNumber` with full
 * transactions or hashes, `eth_getBlockReceipts`, `eth_getLogs`), see `eth-types.ts`.
 *
 * Content per block: 0-200 type-2 (EIP-1559) transactions (about 8% empty blocks, triangular count
 * otherwise), a mix of plain ETH transfers, ERC-20 `transfer(address,uint256)` calls to a fixed set of 20
 * token contracts (emitting the standard `Transfer` log), ERC-20 `approve` calls (`Approval` log) and
 * Uniswap-V2-style swaps through 8 pair contracts (two `Transfer`s, `Sync`, `Swap`), and a few other
 * contract calls without logs. About 3% of transactions fail (`status` `0x0`, no logs).
 *
 * Hashes are Ethereum's (Keccak-256, from @noble/hashes), so code tested here reads a node unchanged:
 * - a block's `hash` is Keccak-256 of its RLP header (the 17 fields of a Shanghai header, in order);
 * - a transaction's `hash` is Keccak-256 of `0x02 ++ RLP([chainId, nonce, maxPriorityFeePerGas,
 *   maxFeePerGas, gas, to, value, input, accessList, yParity, r, s])`, as for a real type-2 transaction;
 * - `logsBloom` is Ethereum's (3 bits of 2048 per address and topic, from the Keccak-256 of each), in
 *   receipts and blocks (block bloom = OR of receipt blooms); `size` is the RLP size of the block;
 * - event topic0s (`Transfer`, `Approval`, `Sync`, `Swap`) and selectors are the real Keccak values.
 * What is still not real: signatures (`r`, `s`) do not recover to `from`, and the state, transactions
 * and receipts roots and `mixHash` are PRNG outputs, not trie roots.
 *
 * Parent links: `parentHash` of block n is the hash of block n-1, except at the first block of each
 * aligned run of PARENT_LINK_RUN blocks (n % 32 == 0), whose parent hash is Keccak-256 of
 * "blockx-localtestservice:<chain>:parent:<n>". A hash of the RLP header that includes the parent's
 * hash chains every block to genesis; the runs keep any block computable from at most 31 others,
 * in any order, at the price of one link in 32 that a real chain would have (a function following
 * parent links sees a break there). The hashes of recently generated blocks are remembered, so a
 * backfill in block order generates each block once.
 */
import { keccak_256 } from "@noble/hashes/sha3.js";
import type { EthBlock, EthLog, EthLogFilter, EthReceipt, EthTransaction, Hex } from "./eth-types";
import { blockHeaderRlp, keccakHex, signedTransactionBytes } from "./eth-hashing";

export type { EthBlock, EthLog, EthLogFilter, EthReceipt, EthTransaction } from "./eth-types";

/** keccak256("Transfer(address,address,uint256)") */
export const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
/** keccak256("Approval(address,address,uint256)") */
export const APPROVAL_TOPIC = "0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925";
/** keccak256("Sync(uint112,uint112)") (Uniswap V2 pair) */
export const SYNC_TOPIC = "0x1c411e9a96e071241c2f21f7726b17ae89e3cab4c78be50e062b03a9fffbbad1";
/** keccak256("Swap(address,uint256,uint256,uint256,uint256,address)") (Uniswap V2 pair) */
export const SWAP_TOPIC = "0xd78ad95fa46c994b6551d0da85fc275fe613ce37657fb8d5e3d130840159d822";
/** `transfer(address,uint256)` selector. */
export const TRANSFER_SELECTOR = "0xa9059cbb";
/** `approve(address,uint256)` selector. */
export const APPROVE_SELECTOR = "0x095ea7b3";

export const EMPTY_TRIE_ROOT = "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421";
export const EMPTY_UNCLES_HASH = "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347";
export const ZERO_HASH = `0x${"0".repeat(64)}`;
export const ZERO_BLOOM = `0x${"0".repeat(512)}`;
const ZERO_WORD = "0".repeat(64);
const MAX_WORD = "f".repeat(64);

export const DEFAULT_HEAD = 20_000_000;
/** parentHash links hold within each aligned run of this many blocks (see the header comment). */
export const PARENT_LINK_RUN = 32;
/** Hashes of generated blocks remembered per chain (a backfill's next block finds its parent's here). */
const REMEMBERED_HASHES = 65_536;
/** Ethereum mainnet genesis timestamp (2015-07-30). */
export const DEFAULT_GENESIS_TIMESTAMP = 1_438_269_973;
export const BLOCK_TIME_SECONDS = 12;
export const BLOCK_GAS_LIMIT = 30_000_000;
export const MAX_TRANSACTIONS_PER_BLOCK = 200;
/** Largest inclusive block range accepted by `logs()`, like a real node's getLogs range limit. */
export const MAX_LOG_BLOCK_RANGE = 10_000;

export const TOKEN_COUNT = 20;
export const PAIR_COUNT = 8;
export const ACCOUNT_COUNT = 5_000;
const MINER_COUNT = 6;

const TOTAL_DIFFICULTY = "0xc70d815d562d3cfa955"; // mainnet's terminal total difficulty (post-merge constant)
const EXTRA_DATA = `0x${Buffer.from("blockx synthetic", "ascii").toString("hex")}`;

const KNOWN_CHAIN_IDS: Record<string, number> = {
  ethereum: 1,
  mainnet: 1,
  eth: 1,
  sepolia: 11_155_111,
  holesky: 17_000,
  optimism: 10,
  base: 8_453,
  arbitrum: 42_161,
  polygon: 137,
};

export interface SyntheticChainOptions {
  /** Highest existing block; blocks above it are `null`. Default 20,000,000. */
  head?: number;
  /** Timestamp of block 0 (seconds); block n has `genesisTimestamp + 12 * n`. */
  genesisTimestamp?: number;
  /** EIP-155 chain id of the transactions. Default: well-known id for the chain name, else derived from it. */
  chainId?: number;
}

// ---------------------------------------------------------------------------------------------------------
// Hex helpers

const BYTE_HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

const HALF_HEX: string[] = Array.from({ length: 65536 }, (_, i) => i.toString(16).padStart(4, "0"));
const SMALL_QTY: string[] = Array.from({ length: 65536 }, (_, i) => `0x${i.toString(16)}`);
const NONZERO_DIGIT = "123456789abcdef";

function wordHex(w: number): string {
  return HALF_HEX[w >>> 16]! + HALF_HEX[w & 65535]!;
}

/** JSON-RPC quantity from a non-negative safe integer. */
function qty(n: number): Hex {
  if (n < 65536) return SMALL_QTY[n]!;
  if (n < 4294967296) return n < 16777216 ? `0x${(n >>> 0).toString(16)}` : qtyFromDigits(wordHex(n >>> 0));
  return `0x${Math.floor(n / 4294967296).toString(16)}${wordHex(n >>> 0)}`;
}

/** JSON-RPC quantity from unprefixed hex digits (possibly with leading zeros). */
function qtyFromDigits(digits: string): Hex {
  let i = 0;
  while (i < digits.length - 1 && digits.charCodeAt(i) === 48) i++;
  return `0x${digits.slice(i) || "0"}`;
}

/** Left-pads unprefixed hex digits to 32 bytes (64 chars). */
function pad32(digits: string): string {
  return digits.length >= 64 ? digits : "0".repeat(64 - digits.length) + digits;
}

function bytesHex(bytes: Uint8Array): string {
  return `0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")}`;
}

// ---------------------------------------------------------------------------------------------------------
// Seeding and PRNG

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Four independent 32-bit FNV-1a hashes of a string (different offset bases). */
function fnv1a128(s: string): [number, number, number, number] {
  const out: [number, number, number, number] = [0x811c9dc5, 0x050c5d1f, 0x2f8d7e4b, 0x6a09e667];
  for (let k = 0; k < 4; k++) {
    let h = out[k]!;
    for (let i = 0; i < s.length; i++) {
      h ^= s.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
    out[k] = fmix32(h);
  }
  return out;
}

const enum Domain {
  Block = 1,
  Account = 2,
  Token = 3,
  Pair = 4,
  Miner = 5,
}

/** sfc32: small fast counter PRNG with 128-bit state; 32-bit outputs. */
class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(key: readonly number[], domain: Domain, n: number) {
    const lo = n >>> 0;
    const hi = Math.floor(n / 4294967296) >>> 0;
    const m = fmix32(lo ^ fmix32(hi + Math.imul(domain, 0x9e3779b9)));
    this.a = fmix32(key[0]! ^ m);
    this.b = fmix32(key[1]! ^ fmix32(m + 0x632be5ab));
    this.c = fmix32(key[2]! ^ fmix32(m + 0x85157af5));
    this.d = fmix32(key[3]! ^ fmix32(m + 0x2545f491)) | 1;
    for (let i = 0; i < 12; i++) this.next();
  }

  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.next() / 4294967296;
  }

  /** Uniform integer in [lo, hi] (inclusive). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.float() * (hi - lo + 1));
  }

  /** `words * 8` random hex digits, unprefixed. */
  digits(words: number): string {
    let s = "";
    for (let i = 0; i < words; i++) s += wordHex(this.next());
    return s;
  }

  /** Random hex digits of the given length (<= 64), unprefixed. */
  digitsOfLength(len: number): string {
    return this.digits(Math.ceil(len / 8)).slice(0, len);
  }

  /** Random unprefixed hex digits of exactly `len` (>= 1) significant digits (non-zero leading digit). */
  significantDigits(len: number): string {
    return NONZERO_DIGIT[this.int(0, 14)]! + (len > 1 ? this.digitsOfLength(len - 1) : "");
  }

  hash32(): Hex {
    return `0x${this.digits(8)}`;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Bloom (Ethereum's construction)

const bloomBitsCache = new Map<string, Uint16Array>();

/** (byteIndex, mask) x 3 for an item given as 0x-prefixed hex (address or topic). */
function bloomBits(item: Hex): Uint16Array {
  const key = item.toLowerCase();
  let bits = bloomBitsCache.get(key);
  if (bits === undefined) {
    const h = keccak_256(Buffer.from(key.slice(2), "hex"));
    bits = new Uint16Array(6);
    for (let i = 0; i < 3; i++) {
      const bit = ((h[2 * i]! << 8) | h[2 * i + 1]!) & 2047;
      bits[2 * i] = 255 - (bit >>> 3);
      bits[2 * i + 1] = 1 << (bit & 7);
    }
    if (bloomBitsCache.size < 200_000) bloomBitsCache.set(key, bits);
  }
  return bits;
}

function bloomAdd(bloom: Uint8Array, bits: Uint16Array): void {
  for (let i = 0; i < 6; i += 2) {
    const at = bits[i]!;
    bloom[at] = bloom[at]! | bits[i + 1]!;
  }
}

/** Whether a 256-byte logs bloom (0x + 512 hex) may contain the address or topic `item`. */
export function bloomContains(bloom: Hex, item: Hex): boolean {
  const bits = bloomBits(item);
  for (let i = 0; i < 6; i += 2) {
    const byte = parseInt(bloom.slice(2 + 2 * bits[i]!, 4 + 2 * bits[i]!), 16);
    if ((byte & bits[i + 1]!) === 0) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------------
// The chain

/** An account or contract: its address, its 32-byte topic form and their (lazily computed) bloom bits. */
class Party {
  readonly topic: Hex;
  private addressBitsCache: Uint16Array | undefined;
  private topicBitsCache: Uint16Array | undefined;

  constructor(readonly address: Hex) {
    this.topic = `0x000000000000000000000000${address.slice(2)}`;
  }

  get addressBits(): Uint16Array {
    return (this.addressBitsCache ??= bloomBits(this.address));
  }

  get topicBits(): Uint16Array {
    return (this.topicBitsCache ??= bloomBits(this.topic));
  }
}

let constantTopicBits: Record<string, Uint16Array> | undefined;
function topicBits(topic: Hex): Uint16Array {
  constantTopicBits ??= {
    [TRANSFER_TOPIC]: bloomBits(TRANSFER_TOPIC),
    [APPROVAL_TOPIC]: bloomBits(APPROVAL_TOPIC),
    [SYNC_TOPIC]: bloomBits(SYNC_TOPIC),
    [SWAP_TOPIC]: bloomBits(SWAP_TOPIC),
  };
  return constantTopicBits[topic]!;
}

interface GeneratedBlock {
  block: EthBlock<EthTransaction>;
  receipts: EthReceipt[];
}

interface PendingLog {
  emitter: Party;
  topic0: Hex;
  /** Indexed address arguments (topics[1..]). */
  indexed: Party[];
  data: Hex;
}

export class SyntheticChain {
  readonly chain: string;
  readonly chainId: number;
  readonly genesisTimestamp: number;
  private readonly headNumber: number;
  private readonly key: [number, number, number, number];
  private readonly chainIdHex: Hex;
  private readonly accountCache: (Party | undefined)[] = new Array<Party | undefined>(ACCOUNT_COUNT).fill(undefined);
  private readonly tokenParties: readonly Party[];
  private readonly pairParties: readonly Party[];
  /** The 20 ERC-20 token contracts (deterministic per chain). */
  readonly tokens: readonly Hex[];
  /** The 8 Uniswap-V2-style pair contracts (deterministic per chain). */
  readonly pairs: readonly Hex[];
  private readonly miners: readonly Hex[];
  private readonly hashes = new Map<number, Hex>();

  constructor(chain: string, options: SyntheticChainOptions = {}) {
    const head = options.head ?? DEFAULT_HEAD;
    if (!Number.isSafeInteger(head) || head < 0) throw new Error(`SyntheticChain: invalid head ${head}`);
    this.chain = chain;
    this.headNumber = head;
    this.genesisTimestamp = options.genesisTimestamp ?? DEFAULT_GENESIS_TIMESTAMP;
    this.key = fnv1a128(`blockx-localtestservice:${chain}`);
    this.chainId = options.chainId ?? KNOWN_CHAIN_IDS[chain.toLowerCase()] ?? 1_000_000 + (this.key[0] % 1_000_000);
    this.chainIdHex = qty(this.chainId);
    this.tokenParties = Array.from({ length: TOKEN_COUNT }, (_, i) => new Party(this.address(Domain.Token, i)));
    this.pairParties = Array.from({ length: PAIR_COUNT }, (_, i) => new Party(this.address(Domain.Pair, i)));
    this.tokens = this.tokenParties.map((p) => p.address);
    this.pairs = this.pairParties.map((p) => p.address);
    this.miners = Array.from({ length: MINER_COUNT }, (_, i) => this.address(Domain.Miner, i));
  }

  /** Highest existing block number. */
  head(): number {
    return this.headNumber;
  }

  /**
   * Hash of block `n`: Keccak-256 of its RLP header (a pure function of (chain, n)). It needs the
   * block's contents and its parent's hash, so the blocks from the start of its parent-link run
   * are generated, oldest first, unless their hashes are remembered.
   */
  blockHash(n: number): Hex {
    const known = this.hashes.get(n);
    if (known !== undefined) return known;
    let from = n;
    while (from % PARENT_LINK_RUN !== 0 && !this.hashes.has(from - 1)) from--;
    for (let k = from; k < n; k++) this.generate(k, false);
    return this.generate(n, false)!.block.hash;
  }

  /** parentHashOf: the hash of block n-1, or at the first block of a run (and genesis) a stand-in (see the header comment). */
  private parentHashOf(n: number): Hex {
    if (n === 0) return ZERO_HASH;
    if (n % PARENT_LINK_RUN === 0) return keccakHex(Buffer.from(`blockx-localtestservice:${this.chain}:parent:${n}`));
    return this.blockHash(n - 1);
  }

  private remember(n: number, hash: Hex): void {
    if (this.hashes.size >= REMEMBERED_HASHES) this.hashes.delete(this.hashes.keys().next().value!);
    this.hashes.set(n, hash);
  }

  /** `eth_getBlockByNumber(n, fullTransactions)`; `null` for blocks that do not exist (n < 0 or n > head). */
  block(n: number, fullTransactions = true): EthBlock | null {
    const g = this.generate(n);
    if (g === null) return null;
    if (fullTransactions) return g.block;
    return { ...g.block, transactions: g.block.transactions.map((tx) => tx.hash) };
  }

  /** `eth_getBlockReceipts(n)`; `null` for blocks that do not exist. */
  blockReceipts(n: number): EthReceipt[] | null {
    const g = this.generate(n);
    return g === null ? null : g.receipts;
  }

  /** `eth_getLogs` over the inclusive range `[fromBlock, toBlock]` (blocks above head contribute nothing). */
  logs(filter: EthLogFilter): EthLog[] {
    const { fromBlock, toBlock } = filter;
    if (!Number.isSafeInteger(fromBlock) || !Number.isSafeInteger(toBlock) || fromBlock < 0 || toBlock < 0) {
      throw new Error(`getLogs: invalid block range ${fromBlock}..${toBlock}`);
    }
    if (fromBlock > toBlock) throw new Error(`getLogs: invalid block range ${fromBlock}..${toBlock} (fromBlock > toBlock)`);
    if (toBlock - fromBlock + 1 > MAX_LOG_BLOCK_RANGE) {
      throw new Error(
        `getLogs: block range ${fromBlock}..${toBlock} spans ${toBlock - fromBlock + 1} blocks, more than the limit of ${MAX_LOG_BLOCK_RANGE}`,
      );
    }
    const addresses =
      filter.address === undefined
        ? null
        : new Set((Array.isArray(filter.address) ? filter.address : [filter.address]).map((a) => a.toLowerCase()));
    const topics = (filter.topics ?? []).map((t) =>
      t === null ? null : Array.isArray(t) ? (t.length === 0 ? null : new Set(t.map((x) => x.toLowerCase()))) : new Set([t.toLowerCase()]),
    );
    const out: EthLog[] = [];
    const last = Math.min(toBlock, this.headNumber);
    for (let n = fromBlock; n <= last; n++) {
      const receipts = this.generate(n)!.receipts;
      for (const r of receipts) {
        for (const log of r.logs) {
          if (matchesLog(log, addresses, topics)) out.push(log);
        }
      }
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------------------

  private address(domain: Domain, i: number): Hex {
    return `0x${new Rng(this.key, domain, i).digits(5)}`;
  }

  private account(i: number): Party {
    let a = this.accountCache[i];
    if (a === undefined) {
      a = new Party(this.address(Domain.Account, i));
      this.accountCache[i] = a;
    }
    return a;
  }

  /** A skewed ("hot accounts") pick from the account pool. */
  private pickAccount(rng: Rng): Party {
    const u = rng.float();
    return this.account(Math.floor(ACCOUNT_COUNT * u * u * u));
  }

  private pickToken(rng: Rng): Party {
    const u = rng.float();
    return this.tokenParties[Math.floor(TOKEN_COUNT * u * u)]!;
  }

  /**
   * generate builds block n with its receipts. With `withTransactionHashes` false it skips the
   * Keccak of every transaction (their `hash` fields stay empty): enough for the block's own
   * hash, which a child's parentHash needs, at a fraction of the cost.
   */
  private generate(n: number, withTransactionHashes = true): GeneratedBlock | null {
    if (!Number.isSafeInteger(n)) throw new Error(`SyntheticChain: block number must be a safe integer, got ${n}`);
    if (n < 0 || n > this.headNumber) return null;

    const rng = new Rng(this.key, Domain.Block, n);
    const parentHash = this.parentHashOf(n);
    // Every blockHash field is set once the header, and so the hash, is known.
    const blockHash = "";
    const blockNumber = qty(n);

    // Header randomness first, so the header does not depend on transaction content order.
    const baseFee = rng.int(3_000_000_000, 45_000_000_000);
    const miner = this.miners[rng.int(0, MINER_COUNT - 1)]!;
    const stateRoot = rng.hash32();
    const mixHash = rng.hash32();
    const txRootRandom = rng.hash32();
    const receiptsRootRandom = rng.hash32();

    let txCount: number;
    if (n === 0 || rng.float() < 0.08) txCount = 0;
    else txCount = 1 + Math.floor(((rng.float() + rng.float()) / 2) * MAX_TRANSACTIONS_PER_BLOCK);
    if (txCount > MAX_TRANSACTIONS_PER_BLOCK) txCount = MAX_TRANSACTIONS_PER_BLOCK;

    const transactions: EthTransaction[] = [];
    const receipts: EthReceipt[] = [];
    const blockBloom = new Uint8Array(256);
    let blockHasLogs = false;
    let cumulativeGas = 0;
    let logIndex = 0;
    let transactionsBytes = 0;

    for (let i = 0; i < txCount; i++) {
      const sender = this.pickAccount(rng);
      const from = sender.address;
      const kind = rng.float();
      let to: Party;
      let input = "0x";
      let value = "0x0";
      let gas: number;
      let gasUsed: number;
      let failed: boolean;
      const logs: PendingLog[] = [];

      if (kind < 0.42) {
        // Plain ETH transfer.
        to = this.pickAccount(rng);
        value = `0x${rng.significantDigits(rng.int(10, 20))}`;
        gas = 21_000;
        gasUsed = 21_000;
        failed = rng.float() < 0.005;
      } else if (kind < 0.82) {
        // ERC-20 transfer(address,uint256).
        to = this.pickToken(rng);
        const recipient = this.pickAccount(rng);
        const amount = pad32(rng.digitsOfLength(rng.int(4, 24)));
        input = `${TRANSFER_SELECTOR}${pad32(recipient.address.slice(2))}${amount}`;
        failed = rng.float() < 0.03;
        gasUsed = failed ? rng.int(22_000, 30_000) : rng.int(29_000, 56_000);
        gas = gasUsed + rng.int(5_000, 60_000);
        if (!failed) logs.push({ emitter: to, topic0: TRANSFER_TOPIC, indexed: [sender, recipient], data: `0x${amount}` });
      } else if (kind < 0.92) {
        // Uniswap-V2-style swap on a pair: tokenIn sender->pair, tokenOut pair->sender, Sync, Swap.
        const pair = this.pairParties[rng.int(0, PAIR_COUNT - 1)]!;
        to = pair;
        const tokenIn = this.pickToken(rng);
        let tokenOut = this.pickToken(rng);
        if (tokenOut === tokenIn) tokenOut = this.tokenParties[(this.tokenParties.indexOf(tokenIn) + 1) % TOKEN_COUNT]!;
        const amountIn = pad32(rng.digitsOfLength(rng.int(8, 24)));
        const amountOut = pad32(rng.digitsOfLength(rng.int(8, 24)));
        const reserve0 = pad32(rng.digitsOfLength(rng.int(16, 28)));
        const reserve1 = pad32(rng.digitsOfLength(rng.int(16, 28)));
        input = `0x022c0d9f${amountIn}${amountOut}${sender.topic.slice(2)}${pad32("80")}${ZERO_WORD}`;
        failed = rng.float() < 0.08;
        gasUsed = failed ? rng.int(25_000, 60_000) : rng.int(90_000, 220_000);
        gas = gasUsed + rng.int(10_000, 80_000);
        if (!failed) {
          logs.push(
            { emitter: tokenIn, topic0: TRANSFER_TOPIC, indexed: [sender, pair], data: `0x${amountIn}` },
            { emitter: tokenOut, topic0: TRANSFER_TOPIC, indexed: [pair, sender], data: `0x${amountOut}` },
            { emitter: pair, topic0: SYNC_TOPIC, indexed: [], data: `0x${reserve0}${reserve1}` },
            {
              emitter: pair,
              topic0: SWAP_TOPIC,
              indexed: [sender, sender],
              data: `0x${amountIn}${ZERO_WORD}${ZERO_WORD}${amountOut}`,
            },
          );
        }
      } else if (kind < 0.97) {
        // ERC-20 approve(address,uint256).
        to = this.pickToken(rng);
        const spender = this.pairParties[rng.int(0, PAIR_COUNT - 1)]!;
        const amount = rng.float() < 0.5 ? MAX_WORD : pad32(rng.digitsOfLength(rng.int(8, 24)));
        input = `${APPROVE_SELECTOR}${spender.topic.slice(2)}${amount}`;
        failed = rng.float() < 0.01;
        gasUsed = failed ? rng.int(22_000, 26_000) : rng.int(24_000, 46_000);
        gas = gasUsed + rng.int(2_000, 20_000);
        if (!failed) logs.push({ emitter: to, topic0: APPROVAL_TOPIC, indexed: [sender, spender], data: `0x${amount}` });
      } else {
        // Some other contract call, no logs (e.g. a pure state write).
        to = this.pickAccount(rng);
        input = `0x${rng.digits(1)}${rng.digits(8 * rng.int(0, 4))}`;
        if (rng.float() < 0.3) value = `0x${rng.significantDigits(rng.int(10, 18))}`;
        failed = rng.float() < 0.1;
        gasUsed = rng.int(30_000, 300_000);
        gas = gasUsed + rng.int(5_000, 100_000);
      }

      if (cumulativeGas + gasUsed > BLOCK_GAS_LIMIT) break;
      cumulativeGas += gasUsed;

      const priority = rng.float() < 0.7 ? rng.int(10_000_000, 2_000_000_000) : rng.int(2_000_000_000, 10_000_000_000);
      const maxFee = baseFee * 2 + priority;
      const effectiveGasPrice = qty(baseFee + priority);
      const nonceU = rng.float();
      const nonce = qty(Math.floor(nonceU * nonceU * nonceU * 200_000));
      const yParity = (rng.next() & 1) === 1 ? "0x1" : "0x0";
      const r = `0x${rng.significantDigits(64)}`;
      const s = `0x${(rng.next() & 0x7fffffff).toString(16)}${rng.digits(7)}`;
      const transactionIndex = qty(i);
      const tx: EthTransaction = {
        blockHash,
        blockNumber,
        from,
        gas: qty(gas),
        gasPrice: effectiveGasPrice,
        maxFeePerGas: qty(maxFee),
        maxPriorityFeePerGas: qty(priority),
        hash: "",
        input,
        nonce,
        to: to.address,
        transactionIndex,
        value,
        type: "0x2",
        accessList: [],
        chainId: this.chainIdHex,
        v: yParity,
        r,
        s,
        yParity,
      };
      if (withTransactionHashes) {
        const signed = signedTransactionBytes(tx);
        tx.hash = keccakHex(signed);
        transactionsBytes += rlpStringLength(signed.length);
      }
      const hash = tx.hash;
      transactions.push(tx);

      const receiptLogs: EthLog[] = [];
      let logsBloom = ZERO_BLOOM;
      if (logs.length > 0) {
        const bloom = new Uint8Array(256);
        for (const l of logs) {
          const topics = [l.topic0];
          bloomAdd(bloom, l.emitter.addressBits);
          bloomAdd(bloom, topicBits(l.topic0));
          for (const p of l.indexed) {
            topics.push(p.topic);
            bloomAdd(bloom, p.topicBits);
          }
          receiptLogs.push({
            address: l.emitter.address,
            topics,
            data: l.data,
            blockNumber,
            transactionHash: hash,
            transactionIndex,
            blockHash,
            logIndex: qty(logIndex++),
            removed: false,
          });
        }
        for (let k = 0; k < 256; k++) blockBloom[k] = blockBloom[k]! | bloom[k]!;
        blockHasLogs = true;
        logsBloom = bytesHex(bloom);
      }
      receipts.push({
        blockHash,
        blockNumber,
        contractAddress: null,
        cumulativeGasUsed: qty(cumulativeGas),
        effectiveGasPrice,
        from,
        gasUsed: qty(gasUsed),
        logs: receiptLogs,
        logsBloom,
        status: failed ? "0x0" : "0x1",
        to: to.address,
        transactionHash: hash,
        transactionIndex,
        type: "0x2",
      });
    }

    const empty = transactions.length === 0;
    const block: EthBlock<EthTransaction> = {
      number: blockNumber,
      hash: blockHash,
      parentHash,
      nonce: "0x0000000000000000",
      sha3Uncles: EMPTY_UNCLES_HASH,
      logsBloom: blockHasLogs ? bytesHex(blockBloom) : ZERO_BLOOM,
      transactionsRoot: empty ? EMPTY_TRIE_ROOT : txRootRandom,
      stateRoot,
      receiptsRoot: empty ? EMPTY_TRIE_ROOT : receiptsRootRandom,
      miner,
      difficulty: "0x0",
      totalDifficulty: TOTAL_DIFFICULTY,
      extraData: EXTRA_DATA,
      size: "0x0",
      gasLimit: qty(BLOCK_GAS_LIMIT),
      gasUsed: qty(cumulativeGas),
      timestamp: qty(this.genesisTimestamp + BLOCK_TIME_SECONDS * n),
      transactions,
      uncles: [],
      baseFeePerGas: qty(baseFee),
      mixHash,
      withdrawals: [],
      withdrawalsRoot: EMPTY_TRIE_ROOT,
    };
    const header = blockHeaderRlp(block);
    block.hash = keccakHex(header);
    // RLP of [header, transactions, uncles (empty), withdrawals (empty)].
    block.size = qty(rlpListLength(header.length + rlpListLength(transactionsBytes) + 1 + 1));
    for (const tx of transactions) tx.blockHash = block.hash;
    for (const r of receipts) {
      r.blockHash = block.hash;
      for (const l of r.logs) l.blockHash = block.hash;
    }
    this.remember(n, block.hash);
    return { block, receipts };
  }
}


function lengthOfLength(n: number): number {
  let k = 0;
  for (let x = n; x > 0; x = Math.floor(x / 256)) k++;
  return k;
}

/** The RLP size of a byte string of n bytes (n > 1), or of a list whose items take n bytes: the same prefix rule. */
function rlpStringLength(n: number): number {
  return n + (n < 56 ? 1 : 1 + lengthOfLength(n));
}
const rlpListLength = rlpStringLength;

function matchesLog(log: EthLog, addresses: Set<string> | null, topics: (Set<string> | null)[]): boolean {
  // geth semantics: an empty address list is no address filter.
  if (addresses !== null && addresses.size > 0 && !addresses.has(log.address)) return false;
  // geth semantics: a filter with more topic positions than the log has never matches, even for wildcards.
  if (topics.length > log.topics.length) return false;
  for (let i = 0; i < topics.length; i++) {
    const alternatives = topics[i];
    if (alternatives != null && !alternatives.has(log.topics[i]!)) return false;
  }
  return true;
}
