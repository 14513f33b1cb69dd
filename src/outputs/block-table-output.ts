import type { BlockScope, TableWrite } from "./stores/table-store";
import type { TableWriteSummary } from "../gen/worker/v1/worker";
import type { JsonValue } from "../runtime/executor/protocol";
import { rowsOf } from "./rows";
import type { WrittenCall, Writer } from "./writer";

/**
 * BlockTableWriter (block_table_write): each call's rows replace, in its call's transaction, every
 * row of its chain whose scope overlaps the call's block or bundle, so a retried, resubmitted or
 * rerun call never leaves a block's rows twice. An earlier scope reaching past the call's is never
 * cut (the store refuses it: SCOPE_CONFLICT); a rerun's bundles are aligned with the scopes written
 * before it when it is submitted (src/worker/core/scope-alignment.ts). Commits as each call finishes.
 */
export class BlockTableWriter implements Writer {
  private rows = 0;
  private calls = 0;

  constructor(
    private readonly table: string,
    private readonly scopeOf: (input: JsonValue) => BlockScope,
  ) {}

  stage(call: WrittenCall): TableWrite[] {
    return [{ kind: "replaceBlock", table: this.table, scope: this.scopeOf(call.input), rows: rowsOf(call.value) }];
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
