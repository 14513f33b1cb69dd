import type { Output as OutputProto } from "../gen/worker/v1/worker";
import type { JsonValue } from "../runtime/json/raw-json";
import type { BlockScope, TableStore } from "./stores/table-store";
import type { Writer } from "./writer";

/** OutputHandler: a task's output as the wire carries it (one case per output kind). */
export type OutputHandler = NonNullable<OutputProto["handler"]>;
/** OutputKind: the name of an output kind, as the proto's case (`blockTableWrite`). */
export type OutputKind = OutputHandler["$case"];

/** OutputSpec: one validated output of a task. Each kind's spec carries its `kind`; table outputs their `table`. */
export interface OutputSpec {
  readonly kind: OutputKind;
  /** The table it writes; absent for an output that writes no table. */
  readonly table?: string;
}

/** What parsing an output may ask of the task it belongs to. */
export interface OutputParseContext {
  /** The field's path for messages: `task.outputs[2].block_table_write`. */
  readonly field: string;
  /** The task's calls cover blocks (block_table, block_bundle), so a call has a block scope. */
  readonly hasBlocks: boolean;
}

/** What a writer may need from the task and the Worker. */
export interface WriterDeps {
  readonly totalCalls: number;
  /** The block scope of a call (block_table and block_bundle call configs); null for inputs. */
  readonly scopeOf: ((input: JsonValue) => BlockScope) | null;
  readonly tables: TableStore | null;
  /** Bytes of JSON return values the task may keep (TASK_MAX_RESULT_BYTES; DEFAULT_MAX_RESULT_BYTES when absent). */
  readonly maxResultBytes?: number;
}

/** OutputSpecError: an output the task gave cannot be taken (the message names the field); the Worker answers INVALID_ARGUMENT. */
export class OutputSpecError extends Error {
  override readonly name = "OutputSpecError";
}

/** WriterSetupError: this Worker cannot open the output's writer (no table store, no block scope). */
export class WriterSetupError extends Error {
  override readonly name = "WriterSetupError";
}

/**
 * Output is one kind of output a task may ask for (the proto's Output.handler case `kind`). An
 * output kind is its file (its Output, its Writer) plus one line in OUTPUT_KINDS (output-kinds.ts):
 * - `parse` validates the wire's handler into the task's spec, or throws OutputSpecError naming the field;
 * - `open` makes the task's Writer for the spec, or throws WriterSetupError;
 * - `writesTables`: a task with such an output has its run claimed and fenced in the table store.
 */
export interface Output<S extends OutputSpec = OutputSpec> {
  readonly kind: S["kind"];
  /** The output's name on the wire and in messages (`block_table_write`). */
  readonly name: string;
  readonly writesTables: boolean;
  parse(handler: OutputHandler, ctx: OutputParseContext): S;
  open(spec: S, deps: WriterDeps): Writer;
}

/** storeOf: the table store a table output writes to, or WriterSetupError. */
export function storeOf(d: WriterDeps): TableStore {
  if (!d.tables) throw new WriterSetupError("this Worker has no table store");
  return d.tables;
}
