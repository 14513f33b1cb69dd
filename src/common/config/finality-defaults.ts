/**
 * Finality depth by chain id: how many blocks below a chain's head a block is taken for final
 * (cacheable, never reorganised), for a chain whose CHAINS_CONFIG entry gives its `chainId` and no
 * `finalityDepth`. A chain neither names falls back to IO_FINALITY_DEPTH (64 by default, the
 * Ethereum mainnet figure). Each figure errs on the late side; README "Chains and finality" says why.
 *
 * - Ethereum and its test nets (1, 11155111 Sepolia, 17000 Holesky, 560048 Hoodi): Casper FFG
 *   finalises a checkpoint two epochs (2 x 32 slots) after it: 64 blocks.
 * - OP Stack chains (10 OP Mainnet, 8453 Base): a block is final once the L1 batch that carries it
 *   is final on Ethereum (about 13 min) after the batch is posted (minutes): 900 blocks of 2 s = 30 min.
 * - Arbitrum One (42161): the same rule with 0.25 s blocks: 7200 blocks = 30 min.
 * - Polygon PoS (137): reorganisations of over 100 blocks happened before milestones (2023: 157);
 *   256 blocks (about 9 min).
 * - BNB Smart Chain (56): fast finality (BEP-126) finalises within 2 blocks of a supermajority
 *   vote; 32 blocks leave room for a missed vote round.
 */
export const FINALITY_DEPTH_BY_CHAIN_ID: Readonly<Record<number, number>> = Object.freeze({
  1: 64,
  11155111: 64,
  17000: 64,
  560048: 64,
  10: 900,
  8453: 900,
  42161: 7200,
  137: 256,
  56: 32,
});

/** knownFinalityDepth: the documented default for a chain id, or undefined for a chain not listed. */
export function knownFinalityDepth(chainId: number | undefined): number | undefined {
  return chainId === undefined ? undefined : FINALITY_DEPTH_BY_CHAIN_ID[chainId];
}
