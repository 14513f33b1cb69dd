import type { ScopeCount } from "./stores/table-store";

/**
 * VerifyFinding: one thing `blockx verify` found wrong with a block table over a block range.
 * - `missing`: blocks no scope covers: no rows, and (for a table written since the scope ledger) no
 *   ledger entry either: never written (a scope whose function returned no rows is in the ledger);
 * - `stale`: a scope whose recorded hash is not the canonical hash of its last block now (its
 *   rows were computed from a block a reorganisation orphaned);
 * - `doubled`: blocks written twice: one scope by two writes (two runs, two hashes), or two
 *   scopes that overlap.
 */
export type VerifyFinding =
  | { readonly kind: "missing"; readonly fromBlock: number; readonly toBlock: number }
  | { readonly kind: "stale"; readonly fromBlock: number; readonly toBlock: number; readonly recorded: string; readonly canonical: string }
  | { readonly kind: "doubled"; readonly fromBlock: number; readonly toBlock: number; readonly detail: string };

/** VerifyTally: what was looked at and how much of it was wrong (blocks for missing, scopes for the others). */
export interface VerifyTally {
  scopes: number;
  rows: number;
  /** Scopes whose rows record no hash (written before hashes were recorded): not compared. */
  unhashed: number;
  missingBlocks: number;
  staleScopes: number;
  doubledScopes: number;
}

/**
 * TableVerification checks a block table against the chain over fromBlock..toBlock, window by
 * window, without IO: the caller feeds each window's scopes (those starting in it, in order: a
 * store's scopeCounts) with the canonical hash of every scope's last block, and gets the findings.
 * A scope starting before the range that reaches into it may be fed first. `finish` reports the
 * blocks after the last scope. Memory is one window's scopes, whatever the range.
 */
export class TableVerification {
  /** The first block no scope has covered yet. */
  private next: number;
  /** The highest block a scope fed so far covers (-1: none), and that scope. */
  private coveredTo = -1;
  private coveredBy = "";
  readonly tally: VerifyTally = { scopes: 0, rows: 0, unhashed: 0, missingBlocks: 0, staleScopes: 0, doubledScopes: 0 };

  constructor(
    readonly fromBlock: number,
    readonly toBlock: number,
  ) {
    this.next = fromBlock;
  }

  /** add: one window's scopes, in (fromBlock, toBlock) order, and the canonical hash of a block (undefined: not known). */
  add(scopes: readonly ScopeCount[], canonicalHash: (block: number) => string | undefined): VerifyFinding[] {
    const out: VerifyFinding[] = [];
    for (let i = 0; i < scopes.length; ) {
      // One scope may come as several entries: written by two runs, or with two hashes.
      let j = i;
      while (j < scopes.length && scopes[j]!.fromBlock === scopes[i]!.fromBlock && scopes[j]!.toBlock === scopes[i]!.toBlock) j++;
      const same = scopes.slice(i, j);
      i = j;
      const s = same[0]!;
      const name = `${s.fromBlock}..${s.toBlock}`;
      this.tally.scopes++;
      this.tally.rows += same.reduce((n, x) => n + x.rows, 0);
      if (s.fromBlock > this.next && this.next <= this.toBlock) {
        const to = Math.min(s.fromBlock - 1, this.toBlock);
        out.push(this.missing(this.next, to));
      }
      if (same.length > 1) {
        this.tally.doubledScopes++;
        const writes = same.map((x) => `run ${x.runSeq} (${x.rows} rows, hash ${x.blockHash ?? "none"})`).join(", ");
        out.push({ kind: "doubled", fromBlock: s.fromBlock, toBlock: s.toBlock, detail: `scope ${name} written ${same.length} times: ${writes}` });
      }
      if (s.fromBlock <= this.coveredTo && s.toBlock >= this.fromBlock) {
        this.tally.doubledScopes++;
        const lo = Math.max(s.fromBlock, this.fromBlock);
        const hi = Math.min(s.toBlock, this.coveredTo);
        out.push({ kind: "doubled", fromBlock: lo, toBlock: hi, detail: `blocks ${lo}..${hi} are in scope ${this.coveredBy} and in scope ${name}` });
      }
      if (s.toBlock >= this.next) this.next = s.toBlock + 1;
      if (s.toBlock > this.coveredTo) {
        this.coveredTo = s.toBlock;
        this.coveredBy = name;
      }
      const canonical = canonicalHash(s.toBlock);
      for (const x of same) {
        if (x.blockHash === null) {
          this.tally.unhashed++;
        } else if (canonical !== undefined && x.blockHash !== canonical) {
          this.tally.staleScopes++;
          out.push({ kind: "stale", fromBlock: s.fromBlock, toBlock: s.toBlock, recorded: x.blockHash, canonical });
        }
      }
    }
    return out;
  }

  /** finish: the blocks after the last scope fed, up to the range's end, are missing. */
  finish(): VerifyFinding[] {
    if (this.next > this.toBlock) return [];
    const f = this.missing(this.next, this.toBlock);
    this.next = this.toBlock + 1;
    return [f];
  }

  /** problems: how many findings there were (missing ranges counted by block). */
  get clean(): boolean {
    const t = this.tally;
    return t.missingBlocks === 0 && t.staleScopes === 0 && t.doubledScopes === 0;
  }

  private missing(from: number, to: number): VerifyFinding {
    this.tally.missingBlocks += to - from + 1;
    return { kind: "missing", fromBlock: from, toBlock: to };
  }
}

/**
 * withLedgerScopes: a window's scopes of the table, with the scopes its scope ledger records that
 * hold no rows (a call whose function returned none: written, not missing) added as scopes of 0
 * rows, in (fromBlock, toBlock) order. A ledger scope the table also holds adds nothing (the table's
 * rows and their hash are what is checked).
 */
export function withLedgerScopes(scopes: readonly ScopeCount[], ledger: readonly ScopeCount[]): { scopes: ScopeCount[]; empty: number } {
  const held = new Set(scopes.map((s) => `${s.fromBlock}..${s.toBlock}`));
  const empty = ledger.filter((s) => !held.has(`${s.fromBlock}..${s.toBlock}`)).map((s) => ({ ...s, rows: 0 }));
  if (empty.length === 0) return { scopes: [...scopes], empty: 0 };
  return { scopes: [...scopes, ...empty].sort((a, b) => a.fromBlock - b.fromBlock || a.toBlock - b.toBlock), empty: empty.length };
}

/** describeFinding: a finding as `blockx verify` prints it. */
export function describeFinding(f: VerifyFinding): string {
  switch (f.kind) {
    case "missing":
      return f.fromBlock === f.toBlock ? `missing: block ${f.fromBlock} has no rows` : `missing: blocks ${f.fromBlock}..${f.toBlock} have no rows`;
    case "stale":
      return `stale: scope ${f.fromBlock}..${f.toBlock} was computed from block ${f.toBlock} ${f.recorded}, but the chain's block ${f.toBlock} is ${f.canonical} (orphaned by a reorganisation)`;
    case "doubled":
      return `doubled: ${f.detail}`;
  }
}
