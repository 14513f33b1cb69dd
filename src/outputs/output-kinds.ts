import { blockTableOutput } from "./block-table-output";
import { normalTableOutput } from "./normal-table-output";
import { returnValueOutput } from "./return-value-output";
import { type Output, type OutputHandler, type OutputKind, type OutputSpec, OutputSpecError, type WriterDeps } from "./output";
import type { Output as OutputProto } from "../gen/worker/v1/worker";
import type { Writer } from "./writer";

/** The output kinds: one line each. */
export const OUTPUT_KINDS: readonly Output[] = [blockTableOutput, normalTableOutput, returnValueOutput];

const BY_KIND = new Map<OutputKind, Output>(OUTPUT_KINDS.map((o) => [o.kind, o]));

/** outputOf: the Output of a kind (every OutputKind has one: output-kinds' test checks it). */
export function outputOf(kind: OutputKind): Output {
  const o = BY_KIND.get(kind);
  if (!o) throw new Error(`no output kind ${kind}`);
  return o;
}

/** The names of the kinds `allowed`, for messages: `block_table_write, normal_table_write`. */
const names = (allowed: readonly OutputKind[]) => allowed.map((k) => outputOf(k).name).join(", ");

/**
 * parseOutputs validates a task's outputs against the kinds a cluster runs (`allowed`, the
 * profile's) into specs, in the task's order; a problem throws OutputSpecError naming the field.
 */
export function parseOutputs(outputs: readonly OutputProto[], allowed: readonly OutputKind[], deployment: string, hasBlocks: boolean): OutputSpec[] {
  if (outputs.length === 0) throw new OutputSpecError("task.outputs: at least one output is required");
  return outputs.map((o, i) => {
    const h: OutputHandler | undefined = o.handler;
    if (!h) throw new OutputSpecError(`task.outputs[${i}]: one of ${names(OUTPUT_KINDS.map((k) => k.kind))} is required`);
    const output = outputOf(h.$case);
    if (!allowed.includes(h.$case)) throw new OutputSpecError(`task.outputs[${i}].${output.name}: the ${deployment} cluster does not run this writer`);
    return output.parse(h, { field: `task.outputs[${i}].${output.name}`, hasBlocks });
  });
}

/** openWriters makes the task's writers, one per output, in the order of the task's outputs. */
export function openWriters(outputs: readonly OutputSpec[], deps: WriterDeps): Writer[] {
  return outputs.map((o) => outputOf(o.kind).open(o, deps));
}

/** writesTables: whether any output writes a table (then the task's run is claimed and fenced). */
export function writesTables(outputs: readonly OutputSpec[]): boolean {
  return outputs.some((o) => outputOf(o.kind).writesTables);
}

/** blockTablesOf: the tables block_table_write outputs write (a rerun aligns with the scopes they hold). */
export function blockTablesOf(outputs: readonly OutputSpec[]): string[] {
  return outputs.flatMap((o) => (o.kind === blockTableOutput.kind && o.table !== undefined ? [o.table] : []));
}
