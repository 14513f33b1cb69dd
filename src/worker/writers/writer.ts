import type { TableWriteSummary } from "../../gen/worker/v1/worker";
import type { CallErrorCode } from "../../runtime/calls/call";
import type { JsonValue } from "../../runtime/executor/protocol";

/** A finished call as a writer sees it: its index in the task, its input and the function's value. */
export interface WrittenCall {
  readonly index: number;
  readonly input: JsonValue;
  readonly value: JsonValue;
}

/**
 * WriteRejected: the call's value cannot be written (not a list of rows, a row that does not fit
 * its table). It fails the call as the user's error, with the code and a message naming the table.
 */
export class WriteRejected extends Error {
  constructor(
    readonly code: CallErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Writer is one output of a task (an OutputHandler of the Task): it receives each succeeded call's
 * value during EXECUTE (and may commit it at once), and `finish` is the WRITE phase, its last
 * commit, run once after every call succeeded. A writer never sees a failed call.
 */
export interface Writer {
  /** write takes one succeeded call's value; throws WriteRejected when it cannot be written. */
  write(call: WrittenCall): void;
  /** finish is the WRITE phase: the writer's closing commit. */
  finish(): void;
  /** The table summary for GetTaskResult, if this writer writes a table. */
  summary(): TableWriteSummary | undefined;
  /** The task's return values in input order, if this writer returns them. */
  returnValues(): readonly JsonValue[] | undefined;
}
