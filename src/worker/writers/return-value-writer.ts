import type { TableWrite } from "../../common/tables/table-store";
import type { JsonValue } from "../../runtime/executor/protocol";
import type { WrittenCall, Writer } from "./writer";

/**
 * ReturnValueWriter (return_value, block cluster only): keeps each call's value by call index; the
 * WRITE phase seals them, in input order, as the task's result.
 */
export class ReturnValueWriter implements Writer {
  private readonly values: JsonValue[];
  private sealed: readonly JsonValue[] | undefined;

  constructor(total: number) {
    this.values = new Array<JsonValue>(total);
  }

  stage(): readonly TableWrite[] {
    return [];
  }

  committed(call: WrittenCall): void {
    this.values[call.index] = call.value;
  }

  finish(): void {
    this.sealed = this.values;
  }

  summary(): undefined {
    return undefined;
  }

  /** The values once the WRITE phase sealed them; none for a task that did not succeed. */
  returnValues(): readonly JsonValue[] | undefined {
    return this.sealed;
  }
}
