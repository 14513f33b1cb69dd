import type { CallSource } from "./dispatcher-core";

/** The input of one block-table call: the user's function receives it as `input`. */
export interface BlockCallInput {
  readonly chain: string;
  readonly blockNumber: number;
}

/** The input of one bundle call: a contiguous, inclusive block range. */
export interface BundleCallInput {
  readonly chain: string;
  readonly fromBlock: number;
  readonly toBlock: number;
}

/** A lazily built sequence of calls whose length is known without building it. */
export interface CallPlan<C> {
  readonly total: number;
  /** A fresh source positioned at the first call. */
  source(): CallSource<C>;
  /** The call at `index` (for retries, error reports), computed, not stored. */
  at(index: number): C;
}

/** planOf turns a size and an index function into a plan whose sources walk it in order. */
function planOf<C>(total: number, at: (index: number) => C): CallPlan<C> {
  return {
    total,
    at,
    source() {
      let i = 0;
      return { next: () => (i < total ? { call: at(i++) } : null) };
    },
  };
}

/**
 * blockTableCalls is the Call Builder of BlockTableCallConfig: one call per block,
 * fromBlock..toBlock inclusive. Nothing is materialised: a 10-million-block range costs the
 * same memory as one block.
 */
export function blockTableCalls(chain: string, fromBlock: number, toBlock: number): CallPlan<BlockCallInput> {
  return planOf(toBlock - fromBlock + 1, (i): BlockCallInput => ({ chain, blockNumber: fromBlock + i }));
}

/**
 * blockBundleCalls is the Call Builder of BlockBundleCallConfig: one call per contiguous bundle
 * of bundleSize blocks, the last one possibly shorter. Bundles are aligned to fromBlock.
 */
export function blockBundleCalls(chain: string, fromBlock: number, toBlock: number, bundleSize: number): CallPlan<BundleCallInput> {
  return planOf(Math.ceil((toBlock - fromBlock + 1) / bundleSize), (i): BundleCallInput => {
    const start = fromBlock + i * bundleSize;
    return { chain, fromBlock: start, toBlock: Math.min(toBlock, start + bundleSize - 1) };
  });
}

/** inputCalls is the Call Builder of InputsCallConfig: one call per input, in order. */
export function inputCalls<T>(inputs: readonly T[]): CallPlan<T> {
  return planOf(inputs.length, (i) => inputs[i]!);
}
