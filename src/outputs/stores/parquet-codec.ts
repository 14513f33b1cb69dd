import { parquetMetadataAsync, parquetReadObjects } from "hyparquet";
import { parquetWriteBuffer, schemaFromColumnData } from "hyparquet-writer";
import { exactInt, parseExactJson } from "../../common/json/exact-json";
import { MAX_FILE_BYTES, MAX_ROW_BYTES } from "./parquet-layout";
import { type BoundCell, type ColumnKind, kindsText, type TableInfo } from "./table-schema";
import { type CellValue, TableStoreError } from "./table-store";

/**
 * How a table's rows are a Parquet file. Column kinds map to Parquet types every engine reads:
 * REAL is DOUBLE, TEXT is STRING, JSON is STRING with the JSON logical type, and INTEGER is a
 * STRING of decimal digits: exact to 78 digits (2^256 - 1) where Parquet's INT64 stops at 19 and
 * DuckDB's DECIMAL at 38 (a DECIMAL(78,0) column is read by DuckDB as a DOUBLE, losing digits).
 * Readers cast (`amount::HUGEINT`, `::DOUBLE`, Python's `int()`); the file's key-value metadata
 * `blockx.kinds` says which STRING columns hold integers. The hidden columns are INT64 and STRING.
 */

/** The file's hidden columns: a block table's scope and run, a normal table's task and call. */
export interface HiddenValues {
  readonly chain?: string;
  readonly fromBlock?: number;
  readonly toBlock?: number;
  readonly runSeq?: number;
  readonly blockHash?: string | null;
  readonly taskId?: string | null;
  readonly callIndex?: number | null;
}

/** JSON columns are typed STRING while the schema is made, then marked JSON (see encodeRows). */
const PARQUET_TYPE: Record<ColumnKind, "STRING" | "DOUBLE"> = { INTEGER: "STRING", REAL: "DOUBLE", TEXT: "STRING", JSON: "STRING" };
const text = new TextDecoder();

function cellBytes(c: BoundCell): number {
  if (c === null) return 1;
  if (typeof c === "number") return 8;
  if (typeof c === "string") return c.length;
  return c.digits.length;
}

/** checkSizes: a row or a file past the bounds fails with its size named, before anything is written. */
export function checkSizes(table: string, rows: readonly BoundCell[][]): void {
  let total = 0;
  rows.forEach((cells, i) => {
    const n = cells.reduce<number>((s, c) => s + cellBytes(c), 0);
    if (n > MAX_ROW_BYTES) throw new TableStoreError("ROW_MISMATCH", `row ${i} of table ${table} is ${n} bytes; a Parquet table store takes rows of at most ${MAX_ROW_BYTES} bytes`);
    total += n;
  });
  if (total > MAX_FILE_BYTES) throw new TableStoreError("INVALID_ARGUMENT", `table ${table}: one call's rows are ${total} bytes; a Parquet table store writes at most ${MAX_FILE_BYTES} bytes of one table per call (a file): return fewer rows per call or use smaller bundles`);
}

/** encodeRows: one Parquet file of a table's bound rows and their hidden columns. */
export function encodeRows(info: TableInfo, rows: readonly BoundCell[][], hidden: HiddenValues): Uint8Array {
  const names = [...info.columns.keys()];
  const columnData = names.map((name, j) => {
    const kind = info.columns.get(name)!;
    const data = rows.map((cells) => {
      const c = cells[j]!;
      if (c === null) return null;
      if (kind === "INTEGER") return typeof c === "object" ? c.digits : String(c);
      return c;
    });
    return { name, data, type: PARQUET_TYPE[kind], nullable: true };
  });
  const n = rows.length;
  const fill = <T>(v: T): T[] => new Array<T>(n).fill(v);
  if (info.blockTable) {
    columnData.push(
      { name: "_chain", data: fill(hidden.chain!), type: "STRING", nullable: false },
      { name: "_scope_from", data: fill(BigInt(hidden.fromBlock!)) as never, type: "INT64" as never, nullable: false },
      { name: "_scope_to", data: fill(BigInt(hidden.toBlock!)) as never, type: "INT64" as never, nullable: false },
      { name: "_run_seq", data: fill(BigInt(hidden.runSeq ?? 0)) as never, type: "INT64" as never, nullable: false },
      { name: "_block_hash", data: fill(hidden.blockHash ?? null), type: "STRING", nullable: true },
    );
  } else {
    columnData.push(
      { name: "_task_id", data: fill(hidden.taskId ?? null), type: "STRING", nullable: true },
      { name: "_call", data: fill(hidden.callIndex === null || hidden.callIndex === undefined ? null : BigInt(hidden.callIndex)) as never, type: "INT64" as never, nullable: true },
    );
  }
  // The JSON logical type on a UTF8 column, without hyparquet's own JSON conversion (JSON.parse and
  // stringify there would turn integers beyond 2^53 into doubles): cells are their exact JSON text.
  const schema = schemaFromColumnData({ columnData });
  names.forEach((name, j) => {
    if (info.columns.get(name) !== "JSON") return;
    schema[j + 1] = { ...schema[j + 1]!, logical_type: { type: "JSON" } };
  });
  const buf = parquetWriteBuffer({ columnData: columnData.map(({ type: _type, ...c }) => c), schema, kvMetadata: [{ key: "blockx.kinds", value: kindsText(info.columns) }], createdBy: "blockx" });
  return new Uint8Array(buf);
}

/** decodeRows: a file's rows as the store reads them: user columns, then a block table's scope columns. */
export async function decodeRows(info: TableInfo, bytes: Uint8Array): Promise<Record<string, CellValue>[]> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  // Files written before block hashes were recorded have no _block_hash: read as null.
  const hasHash = info.blockTable && (await parquetMetadataAsync(file)).schema.some((e) => e.name === "_block_hash");
  const columns = [...info.columns.keys(), ...(info.blockTable ? ["_chain", "_scope_from", "_scope_to", ...(hasHash ? ["_block_hash"] : [])] : [])];
  const raw = (await parquetReadObjects({ file, columns, utf8: true, parsers: { jsonFromBytes: (b: Uint8Array) => b && text.decode(b) } })) as Record<string, unknown>[];
  return raw.map((r) => {
    const out: Record<string, CellValue> = {};
    for (const [c, k] of info.columns) {
      const v = r[c] ?? null;
      if (v === null) out[c] = null;
      else if (k === "INTEGER") out[c] = integerCell(String(v));
      else if (k === "JSON") out[c] = parseExactJson(typeof v === "string" ? v : text.decode(v as Uint8Array)) as CellValue;
      else out[c] = v as CellValue;
    }
    if (info.blockTable) {
      out._chain = String(r._chain);
      out._scope_from = Number(r._scope_from);
      out._scope_to = Number(r._scope_to);
      out._block_hash = typeof r._block_hash === "string" ? r._block_hash : null;
    }
    return out;
  });
}

/** integerCell: a safe integer as a number, any other as an exact integer (as the other stores read them). */
function integerCell(digits: string): CellValue {
  const n = Number(digits);
  return Number.isSafeInteger(n) && String(n) === digits ? n : exactInt(digits);
}
