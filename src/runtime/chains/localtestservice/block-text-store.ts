/**
 * A block text store: the local test chain's blocks rendered once to a file, then served as the
 * stored JSON text, the way a real block database serves stored bytes.
 *
 * Rendering a synthetic block (full transactions, ~70 KB of JSON) costs about a millisecond of
 * JavaScript; a block database hands out bytes it already has. A store lets the local chain stand
 * in for the latter: a backfill over a rendered range measures the pipeline, not the generator.
 *
 * File format: a header line `{"blockxBlockStore":1,"chain":C,"first":F,"count":N}`, then N lines,
 * line i holding `JSON.stringify(chain.block(F + i, true))`. Readers past the header need nothing
 * but a JSON-lines reader (bench/worker/floor.py reads the same file).
 */
import { closeSync, fstatSync, fsyncSync, openSync, readSync, renameSync, rmSync, writeSync } from "node:fs";
import { z } from "zod";
import { RawJson } from "../../json/raw-json";
import type { SyntheticChain } from "./synthetic-chain";

const STORE_VERSION = 1;

const headerSchema = z.object({
  blockxBlockStore: z.literal(STORE_VERSION),
  chain: z.string().min(1),
  first: z.number().int().nonnegative(),
  count: z.number().int().nonnegative(),
});
export type BlockStoreHeader = z.infer<typeof headerSchema>;

export class BlockStoreError extends Error {}

/**
 * writeBlockStore renders blocks [from, to] of `chain` into a store file at `path`. It writes a
 * new file beside it and renames it over `path`: a Worker (and its executors) serving the old file
 * keep reading the old file's bytes, never a file truncated and rewritten under them. The new file
 * is on disk before the rename: after a crash `path` names the old store or the whole new one,
 * never a renamed file whose bytes were still in the page cache (and no writeback of hundreds of
 * megabytes is left to run while a bench measures what follows).
 */
export function writeBlockStore(path: string, chain: SyntheticChain, from: number, to: number): { bytes: number } {
  const partial = `${path}.partial-${process.pid}`;
  const fd = openSync(partial, "w");
  let bytes = 0;
  let done = false;
  try {
    const header: BlockStoreHeader = { blockxBlockStore: STORE_VERSION, chain: chain.chain, first: from, count: to - from + 1 };
    const chunk: string[] = [JSON.stringify(header)];
    let chunkChars = 0;
    const flush = () => {
      // Nothing left when the last block filled a chunk: an empty chunk would add an empty line.
      if (chunk.length === 0) return;
      const text = chunk.join("\n") + "\n";
      bytes += writeSync(fd, text);
      chunk.length = 0;
      chunkChars = 0;
    };
    for (let n = from; n <= to; n++) {
      const line = JSON.stringify(chain.block(n, true));
      chunk.push(line);
      chunkChars += line.length;
      if (chunkChars > 8 << 20) flush();
    }
    flush();
    fsyncSync(fd);
    done = true;
  } finally {
    closeSync(fd);
    if (done) renameSync(partial, path);
    else rmSync(partial, { force: true });
  }
  return { bytes };
}

/**
 * BlockTextStore indexes a store file on open (one pass over it, looking for newlines) and reads a
 * block's line with one positioned read. Reads are synchronous: the file is local and, for the
 * ranges a test or benchmark renders, in the page cache.
 */
export class BlockTextStore {
  private constructor(
    /** The open file (read-only): executors inherit it to read final blocks by offset themselves. */
    readonly fd: number,
    /** `<st_dev>:<st_ino>` of the open file: what an executor that inherited it reports in its Hello. */
    readonly identity: string,
    readonly header: BlockStoreHeader,
    /** offsets[i] = start of block first+i's line; offsets[count] = end of the last line + 1. */
    private readonly offsets: Float64Array,
  ) {}

  static open(path: string): BlockTextStore {
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch (e) {
      throw new BlockStoreError(`cannot open block store ${path}: ${(e as Error).message}`);
    }
    try {
      const size = fstatSync(fd).size;
      const chunk = Buffer.allocUnsafe(16 << 20);
      const lineStarts: number[] = [];
      let headerText = "";
      let headerDone = false;
      let pos = 0;
      while (pos < size) {
        const n = readSync(fd, chunk, 0, chunk.length, pos);
        if (n <= 0) break;
        let from = 0;
        for (;;) {
          const nl = chunk.indexOf(10, from);
          if (nl < 0 || nl >= n) break;
          if (!headerDone) {
            headerText += chunk.toString("utf8", from, nl);
            headerDone = true;
          }
          lineStarts.push(pos + nl + 1);
          from = nl + 1;
        }
        if (!headerDone) headerText += chunk.toString("utf8", 0, n);
        pos += n;
      }
      let header: BlockStoreHeader;
      try {
        header = headerSchema.parse(JSON.parse(headerText));
      } catch (e) {
        throw new BlockStoreError(`${path} is not a block store (bad header line: ${(e as Error).message.split("\n")[0]})`);
      }
      // lineStarts holds the start of every line after a newline; the last one is end-of-file.
      if (lineStarts.length !== header.count + 1) {
        throw new BlockStoreError(`block store ${path} is truncated or damaged: header says ${header.count} blocks, file has ${lineStarts.length - 1} lines`);
      }
      const st = fstatSync(fd, { bigint: true });
      return new BlockTextStore(fd, `${st.dev}:${st.ino}`, header, Float64Array.from(lineStarts));
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  get chain(): string {
    return this.header.chain;
  }

  has(chain: string, n: number): boolean {
    return chain === this.header.chain && n >= this.header.first && n < this.header.first + this.header.count;
  }

  /**
   * read gives block n's stored JSON (the caller checks `has` first): where it lies in the file,
   * read from it only when something needs the bytes (an executor that reads the file itself
   * needs only the span). A short read (the file was truncated) throws BlockStoreError then.
   */
  read(n: number): RawJson {
    const i = n - this.header.first;
    const offset = this.offsets[i]!;
    const length = this.offsets[i + 1]! - 1 - offset;
    return new RawJson({ span: { file: this.identity, offset, length }, load: () => this.readSpan(n, offset, length) });
  }

  private readSpan(n: number, offset: number, length: number): Uint8Array {
    // A buffer of its own per block: the bytes go on to the executor (and maybe a cache) as they are.
    const buf = Buffer.allocUnsafe(length);
    const got = readSync(this.fd, buf, 0, length, offset);
    if (got !== length) throw new BlockStoreError(`short read of block ${n} from the block store (${got} of ${length} bytes): the file was truncated or replaced in place while the Worker served it`);
    return buf;
  }

  close(): void {
    closeSync(this.fd);
  }
}
