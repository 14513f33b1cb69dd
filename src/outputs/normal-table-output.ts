import type { TableWrite } from "./stores/table-store";
import type { TableWriteSummary } from "../gen/worker/v1/worker";
import { rowsOf } from "./rows";
import type { WrittenCall, Writer } from "./writer";

/**
 * NormalTableWriter (normal_table_write): each call's rows are appended in its call's transaction
 * as the call finishes. A rerun appends again, which is why the SDK never resubmits such a task by itself.
 */
export class NormalTableWriter implements Writer {
  private rows = 0;
  private calls = 0;

  constructor(private readonly table: string) {}

  stage(call: WrittenCall): TableWrite[] {
    return [{ kind: "append", table: this.table, rows: rowsOf(call.value) }];
  }

  committed(call: WrittenCall): void {
    this.rows += (call.value as unknown[]).length;
    this.calls++;
  }

  finish(): void {} // every call's rows were committed as it finished

  summary(): TableWriteSummary {
    return { table: this.table, handler: "normal_table_write", rowsWritten: this.rows, callsWritten: this.calls };
  }

  returnValues(): undefined {
    return undefined;
  }
}
