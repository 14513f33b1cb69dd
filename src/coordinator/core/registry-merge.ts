import type { RegistryPrefix } from "../../common/registry/registry-prefix";
import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";

export type RegistryChange =
  | { readonly kind: "update"; readonly heartbeat: WorkerHeartbeat }
  | { readonly kind: "removal"; readonly workerAddr: string };

interface Entry {
  readonly prefix: RegistryPrefix;
  readonly heartbeat: WorkerHeartbeat;
}

/**
 * RegistryMerge folds the heartbeats seen under several registry prefixes into one heartbeat
 * per Worker address (the seed's multi-prefix rule): the newer `lastHeartbeatMs` wins; on a
 * tie v2 beats legacy; then the lexicographically smaller prefix. A Worker leaves the view
 * only when it is gone under every prefix. Pure: the watcher feeds it etcd events and applies
 * the returned changes to the core.
 */
export class RegistryMerge {
  /** Per prefix string: workerAddr -> heartbeat. */
  private readonly byPrefix = new Map<string, Map<string, WorkerHeartbeat>>();
  /** workerAddr -> current winner. */
  private readonly winners = new Map<string, Entry>();

  private readonly prefixesOf: Record<RegistryPrefix["format"], readonly RegistryPrefix[]>;

  constructor(private readonly prefixes: readonly RegistryPrefix[]) {
    for (const p of prefixes) this.byPrefix.set(p.prefix, new Map());
    this.prefixesOf = { legacy: prefixes.filter((p) => p.format === "legacy"), v2: prefixes.filter((p) => p.format === "v2") };
  }

  /** put records a heartbeat seen under `prefix`; returns the view change, if any. */
  put(prefix: string, heartbeat: WorkerHeartbeat): RegistryChange | null {
    this.entries(prefix).set(heartbeat.workerAddr, heartbeat);
    return this.recompute(heartbeat.workerAddr);
  }

  /** delete records that `workerAddr` disappeared under `prefix`. */
  delete(prefix: string, workerAddr: string): RegistryChange | null {
    if (!this.entries(prefix).delete(workerAddr)) return null;
    return this.recompute(workerAddr);
  }

  /**
   * replacePrefix installs a fresh full listing of one prefix (after a list or a relist) and
   * returns the changes it causes: updates for new or changed winners, removals for Workers
   * now gone under every prefix.
   */
  replacePrefix(prefix: string, heartbeats: Iterable<WorkerHeartbeat>): RegistryChange[] {
    const old = this.entries(prefix);
    const fresh = new Map<string, WorkerHeartbeat>();
    for (const hb of heartbeats) fresh.set(hb.workerAddr, hb);
    this.byPrefix.set(prefix, fresh);
    const changes: RegistryChange[] = [];
    for (const addr of new Set([...old.keys(), ...fresh.keys()])) {
      const c = this.recompute(addr);
      if (c) changes.push(c);
    }
    return changes;
  }

  /** The merged view: one heartbeat per Worker. */
  heartbeats(): WorkerHeartbeat[] {
    return [...this.winners.values()].map((e) => e.heartbeat);
  }

  /** countsByFormat counts distinct Workers seen under prefixes of each format. */
  countsByFormat(): { legacy: number; v2: number } {
    return { legacy: this.countOf("legacy"), v2: this.countOf("v2") };
  }

  /**
   * countOf: with one prefix of a format (the usual set-up) its map's size, O(1): the watcher asks
   * after every flush of watch events, hundreds of times a second at scale, and a union of every
   * Worker's address each time grew with the registry. Several prefixes of one format: the union.
   */
  private countOf(format: RegistryPrefix["format"]): number {
    const of = this.prefixesOf[format];
    if (of.length <= 1) return of.length === 0 ? 0 : this.entries(of[0]!.prefix).size;
    const seen = new Set<string>();
    for (const p of of) for (const addr of this.entries(p.prefix).keys()) seen.add(addr);
    return seen.size;
  }

  private entries(prefix: string): Map<string, WorkerHeartbeat> {
    const m = this.byPrefix.get(prefix);
    if (!m) throw new Error(`RegistryMerge: prefix ${prefix} is not configured`);
    return m;
  }

  private recompute(addr: string): RegistryChange | null {
    let best: Entry | undefined;
    for (const p of this.prefixes) {
      const hb = this.entries(p.prefix).get(addr);
      if (hb && (!best || ranksBefore({ prefix: p, heartbeat: hb }, best))) best = { prefix: p, heartbeat: hb };
    }
    const prev = this.winners.get(addr);
    if (!best) {
      if (!prev) return null;
      this.winners.delete(addr);
      return { kind: "removal", workerAddr: addr };
    }
    this.winners.set(addr, best);
    // Compare values, not object identity: a relist parses every heartbeat anew, and an
    // unchanged Worker (or a winner switching to a prefix holding the same value) must not
    // be reported as a change.
    if (prev && sameHeartbeat(prev.heartbeat, best.heartbeat)) return null;
    return { kind: "update", heartbeat: best.heartbeat };
  }
}

/** sameHeartbeat: field-by-field equality of two flat heartbeat objects. */
function sameHeartbeat(a: WorkerHeartbeat, b: WorkerHeartbeat): boolean {
  if (a === b) return true;
  const keys = Object.keys(a) as (keyof WorkerHeartbeat)[];
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => a[k] === b[k]);
}

function ranksBefore(a: Entry, b: Entry): boolean {
  if (a.heartbeat.lastHeartbeatMs !== b.heartbeat.lastHeartbeatMs) return a.heartbeat.lastHeartbeatMs > b.heartbeat.lastHeartbeatMs;
  if (a.prefix.format !== b.prefix.format) return a.prefix.format === "v2";
  return a.prefix.prefix < b.prefix.prefix;
}
