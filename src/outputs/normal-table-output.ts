import type { TableWrite } from "./stores/table-store";
import type { TableWriteSummary } from "../gen/worker/v1/worker";
import { type Output, OutputSpecError, storeOf } from "./output";
import { rowsOf, tableOf } from "./table-outputs";
import type { WrittenCall, Writer } from "./writer";

/** normal_table_write: each call's rows are appended to the table (NormalTableWriter). */
export const normalTableOutput: Output<{ readonly kind: "normalTableWrite"; readonly table: string }> = {
  kind: "normalTableWrite",
  name: "normal_table_write",
  writesTables: true,
  parse(h, ctx) {
    if (h.$case !== "normalTableWrite") throw new OutputSpecError(`${ctx.field}: not a normal_table_write`);
    return { kind: "normalTableWrite", table: tableOf(h.normalTableWrite.table, ctx) };
  },
  open(spec, d) {
    storeOf(d);
    return new NormalTableWriter(spec.table);
  },
};

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
