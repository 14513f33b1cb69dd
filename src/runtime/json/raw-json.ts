/**
 * JSON values as the runtime hands them around: parsed (JsonValue) or already serialised
 * (RawJson, possibly lying in a shared file: SharedSpan). The executor protocol, the IO subsystem,
 * the backends and the outputs all speak them; they live here so none of those imports another for them.
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * SharedSpan says where a value's JSON lies in a file the executor can read itself (the block
 * store, whose open file every executor inherits): `length` bytes at `offset` of the file whose
 * identity (`<st_dev>:<st_ino>`) is `file`.
 */
export interface SharedSpan {
  readonly file: string;
  readonly offset: number;
  readonly length: number;
}

/**
 * RawJson is a value already serialised as JSON (UTF-8 bytes or text). Backends and the IO cache
 * hand blocks around in this form so the Worker never parses and re-serialises a large immutable
 * value on its way to the executor: the frame encoder copies the bytes in as they are.
 *
 * A RawJson made from a SharedSpan knows where its bytes lie in a file executors can read by
 * themselves (`span`) and reads them only when something asks for them: a final block can then
 * be handed to an executor by offset and length, never read by the Worker at all.
 */
export class RawJson {
  private textForm: string | undefined;
  private bytesForm: Uint8Array | undefined;
  private load: (() => Uint8Array) | undefined;
  /** Where the bytes lie in a shared file, or null. */
  readonly span: SharedSpan | null;

  /** data: the text, the bytes, or where they lie in a shared file and how to read them there (at most once, on first use). */
  constructor(data: string | Uint8Array | { readonly span: SharedSpan; readonly load: () => Uint8Array }) {
    this.span = null;
    if (typeof data === "string") this.textForm = data;
    else if (data instanceof Uint8Array) this.bytesForm = data;
    else {
      this.span = data.span;
      this.load = data.load;
    }
  }

  get text(): string {
    return (this.textForm ??= utf8Decoder.decode(this.bytes));
  }

  /** The bytes (read from the shared file now if they were not yet: that may throw). */
  get bytes(): Uint8Array {
    if (this.bytesForm === undefined) {
      if (this.load) {
        this.bytesForm = this.load();
        this.load = undefined;
      } else this.bytesForm = utf8Encoder.encode(this.textForm);
    }
    return this.bytesForm;
  }

  /** Size in bytes of the serialised value (what a byte-bounded cache charges). */
  get byteLength(): number {
    return this.span !== null ? this.span.length : this.bytes.byteLength;
  }

  /**
   * residentBytes: the size of what this object holds in memory: nothing for a span whose bytes
   * were never read (the page cache holds them, not the Worker), else its byte length.
   */
  get residentBytes(): number {
    return this.span !== null && this.bytesForm === undefined ? 0 : this.byteLength;
  }

  /** withoutSpan: the same value as plain bytes, read now (for a reader that cannot read the shared file). */
  withoutSpan(): RawJson {
    return this.span === null ? this : new RawJson(this.bytes);
  }

  /** parse gives the value itself, for the rare reader inside the Worker. */
  parse(): JsonValue {
    return JSON.parse(this.text) as JsonValue;
  }
}

const utf8Decoder = new TextDecoder();
const utf8Encoder = new TextEncoder();
