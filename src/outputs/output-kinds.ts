import type { JsonValue } from "../runtime/executor/protocol";
import { BlockTableWriter } from "./block-table-output";
import { NormalTableWriter } from "./normal-table-output";
import { ReturnValueWriter } from "./return-value-output";
import type { BlockScope, TableStore } from "./stores/table-store";
import type { Writer } from "./writer";

/** OutputSpec: one validated output of a task (planTask makes them; the profile allows the kinds). */
export type OutputSpec = { readonly kind: "blockTableWrite"; readonly table: string } | { readonly kind: "normalTableWrite"; readonly table: string } | { readonly kind: "returnValue" };

export type OutputKind = OutputSpec["kind"];

/** What a writer may need from the task and the Worker. */
export interface WriterDeps {
  readonly totalCalls: number;
  /** The block scope of a call (block_table and block_bundle call configs); null for inputs. */
  readonly scopeOf: ((input: JsonValue) => BlockScope) | null;
  readonly tables: TableStore | null;
  /** Bytes of JSON return values the task may keep (TASK_MAX_RESULT_BYTES; DEFAULT_MAX_RESULT_BYTES when absent). */
  readonly maxResultBytes?: number;
}

export class WriterSetupError extends Error {}

/** The writer plugins: one line per output kind. */
const WRITERS: { readonly [K in OutputKind]: (spec: Extract<OutputSpec, { kind: K }>, d: WriterDeps) => Writer } = {
  blockTableWrite: (s, d) => (tablesOf(d), new BlockTableWriter(s.table, scopeOf(d))),
  normalTableWrite: (s, d) => (tablesOf(d), new NormalTableWriter(s.table)),
  returnValue: (_s, d) => new ReturnValueWriter(d.totalCalls, d.maxResultBytes),
};

/** createWriters makes the task's writers, one per output, in the order of the task's outputs. */
export function createWriters(outputs: readonly OutputSpec[], deps: WriterDeps): Writer[] {
  return outputs.map((o) => (WRITERS[o.kind] as (spec: OutputSpec, d: WriterDeps) => Writer)(o, deps));
}

function tablesOf(d: WriterDeps): TableStore {
  if (!d.tables) throw new WriterSetupError("this Worker has no table store");
  return d.tables;
}

function scopeOf(d: WriterDeps): (input: JsonValue) => BlockScope {
  if (!d.scopeOf) throw new WriterSetupError("block_table_write needs a block_table or block_bundle call config");
  return d.scopeOf;
}
