import { createHash } from "node:crypto";

export interface FunctionCode {
  readonly name: string;
  readonly source: string;
  /** sha256 hex of source: the executor's compile-cache key. */
  readonly digest: string;
}

/**
 * FunctionSnapshot is an immutable view of every named function at one epoch. A task pins the
 * snapshot current at its activation, so editing a function mid-backfill never changes a
 * running task.
 */
export interface FunctionSnapshot {
  readonly epoch: number;
  get(name: string): FunctionCode | undefined;
  names(): readonly string[];
  /** Why a file of this name was not loaded (a symbolic link out of the folder), or undefined. */
  refused?(name: string): string | undefined;
}

export function digestOf(source: string): string {
  return createHash("sha256").update(source).digest("hex");
}

const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function isFunctionName(name: string): boolean {
  return FUNCTION_NAME.test(name);
}

/**
 * FunctionCodeView holds the current snapshot of named functions (from FUNCTIONS_DIR or the
 * meta backend). `update` installs a new full set of sources and, if anything was added,
 * removed or changed, a new snapshot with the next epoch; an identical set keeps the epoch.
 * Pure: the adapter that reads the directory calls update.
 */
export class FunctionCodeView {
  private snapshot: FunctionSnapshot = freeze(0, new Map());

  current(): FunctionSnapshot {
    return this.snapshot;
  }

  /** update returns true when the set changed (and the epoch grew); `refused`: names not loaded, with why. */
  update(sources: ReadonlyMap<string, string>, refused: ReadonlyMap<string, string> = new Map()): boolean {
    const prev = this.snapshot;
    const next = new Map<string, FunctionCode>();
    for (const [name, source] of sources) {
      if (!isFunctionName(name)) throw new Error(`function name ${JSON.stringify(name)} is not a Python identifier`);
      const old = prev.get(name);
      next.set(name, old && old.source === source ? old : { name, source, digest: digestOf(source) });
    }
    const sameRefused = refused.size === this.refusedNow.size && [...refused].every(([k, v]) => this.refusedNow.get(k) === v);
    const same = sameRefused && next.size === prev.names().length && [...next.values()].every((f) => prev.get(f.name) === f);
    if (same) return false;
    this.refusedNow = new Map(refused);
    this.snapshot = freeze(prev.epoch + 1, next, this.refusedNow);
    return true;
  }

  private refusedNow: ReadonlyMap<string, string> = new Map();
}

function freeze(epoch: number, functions: Map<string, FunctionCode>, refused: ReadonlyMap<string, string> = new Map()): FunctionSnapshot {
  const names = Object.freeze([...functions.keys()].sort());
  return Object.freeze({ epoch, get: (name: string) => functions.get(name), names: () => names, refused: (name: string) => refused.get(name) });
}
