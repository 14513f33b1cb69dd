import { dlopen, FFIType, read as ffiRead } from "bun:ffi";
import { closeSync, existsSync, fsyncSync, linkSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, unlinkSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * File operations of the Parquet dataset store, each idempotent (a recovery after a crash runs an
 * intent's operations again from the start: one already done is skipped) and each visible to a
 * reader that lists the dataset as one step (a rename, an unlink, an exchange of two folders).
 */

/** writeDurable writes `bytes` to a new file and fsyncs it (the file is complete before it is named anywhere a reader looks). */
export function writeDurable(path: string, bytes: Uint8Array): void {
  const fd = openSync(path, "wx");
  try {
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** fsyncDir makes a folder's entries (renames into it, unlinks) durable. */
export function fsyncDir(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** ParquetOp: one step of a commit's intent, relative to the dataset's root. */
export type ParquetOp =
  /** Rename a staged file into place (over an earlier file of the same scope or call: atomic). */
  | { readonly op: "place"; readonly from: string; readonly to: string }
  /** Remove one file. */
  | { readonly op: "remove"; readonly path: string }
  /**
   * Replace a folder's set of files at once: a copy of folder `dir` (hard links) without `remove`
   * and with `add` is built at `via`, then the two folders are exchanged (renameat2
   * RENAME_EXCHANGE: one step for every reader), and the old one, now at `via`, is removed.
   */
  | { readonly op: "swap"; readonly dir: string; readonly via: string; readonly remove: readonly string[]; readonly add: { readonly from: string; readonly name: string } | null; readonly marker: string }
  /** Remove a staged file that was linked in place by a swap. */
  | { readonly op: "drop"; readonly path: string };

/** runOps carries out an intent's operations in order, then fsyncs every folder they changed. */
export function runOps(root: string, ops: readonly ParquetOp[], hooks: OpHooks = {}): void {
  const dirs = new Set<string>();
  for (const o of ops) {
    hooks.before?.(o);
    if (o.op === "place") {
      const to = join(root, o.to);
      if (!existsSync(join(root, o.from))) continue; // done before a crash
      const dir = dirname(to);
      if (!existsSync(dir)) {
        mkdirSync(dir, { recursive: true });
        dirs.add(dirname(dir)).add(dirname(dirname(dir)));
      }
      renameSync(join(root, o.from), to);
      dirs.add(dir);
    } else if (o.op === "remove") {
      rmSync(join(root, o.path), { force: true });
      dirs.add(dirname(join(root, o.path)));
    } else if (o.op === "drop") {
      rmSync(join(root, o.path), { force: true });
    } else {
      swapFolder(root, o, hooks);
      dirs.add(dirname(join(root, o.dir))).add(join(root, o.dir));
    }
  }
  for (const d of dirs) if (existsSync(d)) fsyncDir(d);
}

/** OpHooks: a test's way to stop a commit between two of its steps (a crash). */
export interface OpHooks {
  readonly before?: (o: ParquetOp) => void;
  /** Inside a swap: its copy built (`swapBuilt`), its folders exchanged (`swapExchanged`). */
  readonly step?: (name: "swapBuilt" | "swapExchanged") => void;
}

function swapFolder(root: string, o: Extract<ParquetOp, { op: "swap" }>, hooks: OpHooks): void {
  const dir = join(root, o.dir);
  const via = join(root, o.via);
  if (existsSync(join(dir, o.marker))) {
    // Exchanged before a crash: only the old folder (now at via) and the marker are left to remove.
    rmSync(via, { recursive: true, force: true });
    rmSync(join(dir, o.marker), { force: true });
    return;
  }
  // Its staged file dropped: the swap finished (the drop follows it). Without a file to add, doing it again changes nothing.
  if (o.add && !existsSync(join(root, o.add.from))) return;
  rmSync(via, { recursive: true, force: true }); // a copy half built before a crash
  mkdirSync(via, { recursive: true });
  const drop = new Set([...o.remove, ...(o.add ? [o.add.name] : [])]);
  for (const name of readdirSync(dir)) if (name.endsWith(".parquet") && !drop.has(name)) linkSync(join(dir, name), join(via, name));
  if (o.add) linkSync(join(root, o.add.from), join(via, o.add.name));
  writeDurable(join(via, o.marker), new Uint8Array(0));
  fsyncDir(via);
  hooks.step?.("swapBuilt");
  exchange(via, dir);
  fsyncDir(dirname(dir));
  fsyncDir(dirname(via));
  hooks.step?.("swapExchanged");
  rmSync(via, { recursive: true, force: true });
  rmSync(join(dir, o.marker), { force: true });
}

let libc: { renameat2: (a: number, b: Uint8Array, c: number, d: Uint8Array, f: number) => number; errno: () => number } | undefined;

/** exchange swaps two paths in one step (Linux renameat2 with RENAME_EXCHANGE; ext4, xfs, btrfs, tmpfs). */
export function exchange(a: string, b: string): void {
  if (!libc) {
    const lib = dlopen("libc.so.6", {
      renameat2: { args: [FFIType.i32, FFIType.ptr, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
      __errno_location: { args: [], returns: FFIType.ptr },
    });
    libc = {
      renameat2: (x, y, z, w, f) => lib.symbols.renameat2(x, y, z, w, f),
      errno: () => ffiRead.i32(lib.symbols.__errno_location()!, 0),
    };
  }
  const AT_FDCWD = -100;
  const RENAME_EXCHANGE = 2;
  const cstr = (s: string) => new TextEncoder().encode(`${s}\0`);
  if (libc.renameat2(AT_FDCWD, cstr(a), AT_FDCWD, cstr(b), RENAME_EXCHANGE) !== 0) {
    const errno = libc.errno();
    throw Object.assign(new Error(`renameat2(RENAME_EXCHANGE) ${a} <-> ${b} failed: errno ${errno}${errno === 22 ? " (the filesystem cannot exchange folders: use ext4, xfs, btrfs or tmpfs)" : ""}`), { code: `ERRNO_${errno}` });
  }
}
