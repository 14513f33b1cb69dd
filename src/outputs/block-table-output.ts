import type { BlockScope, TableWrite } from "./stores/table-store";
import type { TableWriteSummary } from "../gen/worker/v1/worker";
import type { JsonValue } from "../runtime/json/raw-json";
import { type Output, OutputSpecError, storeOf, WriterSetupError } from "./output";
import { rowsOf, tableOf } from "./table-outputs";
import { SCOPE_LEDGER_ROWS_COLUMN, scopeLedgerName } from "./stores/table-schema";
import type { WrittenCall, Writer } from "./writer";

/** block_table_write: each call's rows replace its block's or bundle's scope of the table (BlockTableWriter). */
export const blockTableOutput: Output<{ readonly kind: "blockTableWrite"; readonly table: string; readonly recordScopes?: boolean }> = {
  kind: "blockTableWrite",
  name: "block_table_write",
  writesTables: true,
  parse(h, ctx) {
    if (h.$case !== "blockTableWrite") throw new OutputSpecError(`${ctx.field}: not a block_table_write`);
    if (!ctx.hasBlocks) throw new OutputSpecError(`${ctx.field}: needs a block_table or block_bundle call config (inputs have no block)`);
    return { kind: "blockTableWrite", table: tableOf(h.blockTableWrite.table, ctx), ...(h.blockTableWrite.recordScopes ? { recordScopes: true } : {}) };
  },
  open(spec, d) {
    storeOf(d);
    if (!d.scopeOf) throw new WriterSetupError("block_table_write needs a block_table or block_bundle call config");
    return new BlockTableWriter(spec.table, d.scopeOf, spec.recordScopes === true);
  },
};

/**
 * BlockTableWriter (block_table_write): each call's rows replace, in its call's transaction, every
 * row of its chain whose scope overlaps the call's block or bundle, so a retried, resubmitted or
 * rerun call never leaves a block's rows twice. An earlier scope reaching past the call's is never
 * cut (the store refuses it: SCOPE_CONFLICT); a rerun's bundles are aligned with the scopes written
 * before it when it is submitted (src/worker/core/scope-alignment.ts). Commits as each call finishes.
 * Each row records the hash of its scope's last block as the call saw it (`_block_hash`, from
 * WrittenCall.blockHash), so that a reorganisation that orphaned it can be seen (`blockx verify`).
 * With record_scopes (blockx follow's tasks set it), the same transaction records the scope in the
 * table's scope ledger (scopeLedgerName: one row per scope, its hash, how many rows), rows or none:
 * what `blockx follow` resumes from and what lets `blockx verify` tell a scope whose function
 * returned no rows from one never written. Off by default: a second write per commit costs a
 * backfill's commits 25-40% (bench/tables/scope-ledger.ts).
 */
export class BlockTableWriter implements Writer {
  private rows = 0;
  private calls = 0;
  private readonly ledger: string | null;

  constructor(
    private readonly table: string,
    private readonly scopeOf: (input: JsonValue) => BlockScope,
    recordScopes = false,
  ) {
    this.ledger = recordScopes ? scopeLedgerName(table) : null;
  }

  stage(call: WrittenCall): TableWrite[] {
    const s = this.scopeOf(call.input);
    const scope: BlockScope = { chain: s.chain, fromBlock: s.fromBlock, toBlock: s.toBlock, blockHash: call.blockHash ?? null };
    const rows = rowsOf(call.value);
    const write: TableWrite = { kind: "replaceBlock", table: this.table, scope, rows };
    if (this.ledger === null) return [write];
    return [write, { kind: "replaceBlock", table: this.ledger, scope, rows: [{ [SCOPE_LEDGER_ROWS_COLUMN]: rows.length }] }];
  }

  committed(call: WrittenCall): void {
    this.rows += (call.value as unknown[]).length;
    this.calls++;
  }

  finish(): void {} // every call's rows were committed as it finished

  summary(): TableWriteSummary {
    return { table: this.table, handler: "block_table_write", rowsWritten: this.rows, callsWritten: this.calls };
  }

  returnValues(): undefined {
    return undefined;
  }
}
