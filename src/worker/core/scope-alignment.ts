import type { BundleCallInput, CallPlan } from "./call-builder";

/** A scope written before (a block table's rows' hidden columns): inclusive, wider than one block. */
export interface ExistingScope {
  readonly fromBlock: number;
  readonly toBlock: number;
}

/** A run of bundles: `count` bundles of `size` blocks from `from`, the first being call `firstIndex`. */
interface Segment {
  readonly firstIndex: number;
  readonly from: number;
  readonly size: number;
  readonly count: number;
}

/** AlignedBundles: the bundles of a rerun, and the range they cover (the task's, widened to whole earlier scopes). */
export interface AlignedBundles {
  readonly fromBlock: number;
  readonly toBlock: number;
  readonly calls: CallPlan<BundleCallInput>;
}

/**
 * alignBundles plans a bundle task over from..to so that no bundle cuts a scope written before:
 * rows carry no block of their own, so replacing part of an earlier scope would remove the rows of
 * its other blocks with it. The range widens to the earlier scopes it overlaps at its ends, and a
 * bundle whose end falls inside an earlier scope extends to that scope's end; every other bundle
 * is `bundleSize` blocks, aligned on the (widened) start, as without earlier scopes. `scopes` are
 * those overlapping from..to (any order; they may overlap each other when several tables are
 * written). The plan is kept as runs of equal bundles: its size grows with the scopes, never with
 * the range.
 */
export function alignBundles(chain: string, fromBlock: number, toBlock: number, bundleSize: number, scopes: readonly ExistingScope[]): AlignedBundles {
  const sorted = [...scopes].sort((a, b) => a.fromBlock - b.fromBlock || a.toBlock - b.toBlock);
  const from = Math.min(fromBlock, sorted[0]?.fromBlock ?? fromBlock);
  const to = Math.max(toBlock, ...sorted.map((s) => s.toBlock));
  const segments: Segment[] = [];
  let index = 0;
  const emit = (start: number, size: number, count: number) => {
    if (count <= 0) return;
    const last = segments.at(-1);
    if (last && last.size === size && last.from + last.size * last.count === start) segments[segments.length - 1] = { ...last, count: last.count + count };
    else segments.push({ firstIndex: index, from: start, size, count });
    index += count;
  };
  let j = 0; // scopes with fromBlock <= the current end have been seen
  let maxTo = -Infinity;
  let start = from;
  while (start <= to) {
    while (j < sorted.length && sorted[j]!.toBlock < start) j++; // behind us
    const next = sorted[j];
    if (!next) {
      // No earlier scope ahead: plain bundles to the end, the last one possibly shorter.
      const full = Math.floor((to - start + 1) / bundleSize);
      emit(start, bundleSize, full);
      start += full * bundleSize;
      if (start <= to) emit(start, to - start + 1, 1);
      break;
    }
    // Plain bundles that end before the next scope starts.
    const plain = Math.max(0, Math.floor((next.fromBlock - start) / bundleSize));
    emit(start, bundleSize, plain);
    start += plain * bundleSize;
    // This bundle reaches the scope: extend its end past every scope it would cut.
    let end = Math.min(to, start + bundleSize - 1);
    for (;;) {
      while (j < sorted.length && sorted[j]!.fromBlock <= end) maxTo = Math.max(maxTo, sorted[j++]!.toBlock);
      if (maxTo <= end) break;
      end = maxTo;
    }
    emit(start, end - start + 1, 1);
    start = end + 1;
  }
  const total = index;
  const at = (i: number): BundleCallInput => {
    let lo = 0;
    let hi = segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (segments[mid]!.firstIndex <= i) lo = mid;
      else hi = mid - 1;
    }
    const s = segments[lo]!;
    const b = s.from + (i - s.firstIndex) * s.size;
    return { chain, fromBlock: b, toBlock: b + s.size - 1 };
  };
  return {
    fromBlock: from,
    toBlock: to,
    calls: {
      total,
      at,
      source() {
        let i = 0;
        return { next: () => (i < total ? { call: at(i++) } : null) };
      },
    },
  };
}
