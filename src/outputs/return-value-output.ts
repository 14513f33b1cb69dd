import type { TableWrite } from "./stores/table-store";
import { CallErrorCode } from "../runtime/calls/call";
import type { JsonValue } from "../runtime/json/raw-json";
import { type Output, OutputSpecError } from "./output";
import { WriteRejected, type WrittenCall, type Writer } from "./writer";

/** TASK_MAX_RESULT_BYTES' default: what one task's return values may hold in the Worker's memory. */
export const DEFAULT_MAX_RESULT_BYTES = 64 * 1024 * 1024;

/** return_value (block cluster only): the calls' values, in input order, are the task's result (ReturnValueWriter). */
export const returnValueOutput: Output<{ readonly kind: "returnValue" }> = {
  kind: "returnValue",
  name: "return_value",
  writesTables: false,
  parse(h, ctx) {
    if (h.$case !== "returnValue") throw new OutputSpecError(`${ctx.field}: not a return_value`);
    return { kind: "returnValue" };
  },
  open: (_spec, d) => new ReturnValueWriter(d.totalCalls, d.maxResultBytes),
};

/**
 * ReturnValueWriter (return_value, block cluster only): keeps each call's value by call index; the
 * WRITE phase seals them, in input order, as the task's result. The values kept are bounded by
 * `maxBytes` of JSON: a call whose value would take the task past it fails with RESULT_TOO_LARGE
 * (not retried: the same value would not fit again), which fails the task and frees what it kept.
 */
export class ReturnValueWriter implements Writer {
  private readonly values: JsonValue[];
  private sealed: readonly JsonValue[] | undefined;
  /** Bytes of JSON of the values kept so far. */
  private keptBytes = 0;
  /** Each staged call's size, until its commit says it is kept (a call retried after a failed commit is staged again). */
  private readonly staged = new Map<number, number>();

  constructor(
    total: number,
    private readonly maxBytes = DEFAULT_MAX_RESULT_BYTES,
  ) {
    this.values = new Array<JsonValue>(total);
  }

  stage(call: WrittenCall): readonly TableWrite[] {
    const bytes = Buffer.byteLength(JSON.stringify(call.value ?? null), "utf8");
    if (this.keptBytes + bytes > this.maxBytes) {
      throw new WriteRejected(
        CallErrorCode.ResultTooLarge,
        `the task's return values would take ${this.keptBytes + bytes} bytes of JSON (this call's: ${bytes}), over the limit of ${this.maxBytes} per task (TASK_MAX_RESULT_BYTES); ` +
          "return less per call, or write to a table instead",
      );
    }
    this.staged.set(call.index, bytes);
    return [];
  }

  committed(call: WrittenCall): void {
    this.keptBytes += this.staged.get(call.index) ?? 0;
    this.staged.delete(call.index);
    this.values[call.index] = call.value;
  }

  finish(): void {
    this.sealed = this.values;
  }

  summary(): undefined {
    return undefined;
  }

  /** keptBytes: the JSON bytes of the values kept (what the Worker holds for the task's result). */
  resultBytes(): number {
    return this.keptBytes;
  }

  /** The values once the WRITE phase sealed them; none for a task that did not succeed. */
  returnValues(): readonly JsonValue[] | undefined {
    return this.sealed;
  }
}
