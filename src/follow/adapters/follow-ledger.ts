import type { TableStore } from "../../outputs/stores/table-store";
import { scopeLedgerName } from "../../outputs/stores/table-schema";
import type { WrittenBlock } from "../core/follower-events";

/**
 * FollowLedger is the follower's position, kept where the rows are: the table's scope ledger
 * (scopeLedgerName), which every block-table commit writes in the same transaction as the block's
 * rows. Reading it back is reading what is durable, so a follower restarted anywhere resumes from
 * the last block whose rows committed: none skipped, none written twice.
 */
export class FollowLedger {
  readonly ledger: string;

  constructor(
    private readonly store: TableStore,
    readonly table: string,
    readonly chain: string,
  ) {
    this.ledger = scopeLedgerName(table);
  }

  /** bounds: the lowest and highest block the ledger holds for the chain (null: none). */
  bounds(): Promise<{ fromBlock: number; toBlock: number } | null> {
    return this.missingTableIsEmpty(() => this.store.scopeBounds(this.ledger, this.chain));
  }

  /** tail: the last `count` blocks the ledger holds for the chain (a scope counts as its last block, with its hash); [] when none. */
  async tail(count: number): Promise<WrittenBlock[]> {
    const bounds = await this.missingTableIsEmpty(() => this.store.scopeBounds(this.ledger, this.chain));
    if (bounds === null) return [];
    return this.blocks(Math.max(bounds.fromBlock, bounds.toBlock - count + 1), bounds.toBlock);
  }

  /** blocks: what the ledger records for fromBlock..toBlock (a block in two entries: the later run's). */
  async blocks(fromBlock: number, toBlock: number): Promise<WrittenBlock[]> {
    const scopes = (await this.missingTableIsEmpty(() => this.store.scopeCounts(this.ledger, this.chain, fromBlock, toBlock))) ?? [];
    const byBlock = new Map<number, { hash: string | null; runSeq: number }>();
    for (const s of scopes) {
      const had = byBlock.get(s.toBlock);
      if (!had || s.runSeq >= had.runSeq) byBlock.set(s.toBlock, { hash: s.blockHash, runSeq: s.runSeq });
    }
    return [...byBlock].sort((a, b) => a[0] - b[0]).map(([number, b]) => ({ number, hash: b.hash }));
  }

  /**
   * rewind removes the rows and ledger entries of blocks orphanedFrom..orphanedTo of the chain in
   * one transaction (two empty block-table writes over the range: each replaces every scope inside
   * it). Readers see the table end at the fork point, then grow again with the canonical blocks;
   * never orphaned and canonical blocks mixed. A scope reaching below orphanedFrom (a wide bundle
   * written by a backfill) is not cut: the store refuses it (SCOPE_CONFLICT) and nothing is removed.
   */
  async rewind(orphanedFrom: number, orphanedTo: number): Promise<void> {
    const scope = { chain: this.chain, fromBlock: orphanedFrom, toBlock: orphanedTo, blockHash: null };
    await this.store.commit([
      { kind: "replaceBlock", table: this.table, scope, rows: [] },
      { kind: "replaceBlock", table: this.ledger, scope, rows: [] },
    ]);
  }

  private async missingTableIsEmpty<T>(read: () => Promise<T>): Promise<T | null> {
    try {
      return await read();
    } catch (e) {
      if ((e as { code?: string }).code === "NO_SUCH_TABLE") return null;
      throw e;
    }
  }
}
