import type { ReplaceOutcome, TableWrite } from "./stores/table-store";
import type { TableWriteSummary } from "../gen/worker/v1/worker";
import type { CallErrorCode } from "../runtime/calls/call";
import type { JsonValue } from "../runtime/json/raw-json";

/** A finished call as a writer sees it: its index in the task, its input and the function's value. */
export interface WrittenCall {
  readonly index: number;
  readonly input: JsonValue;
  readonly value: JsonValue;
  /** The hash of the call's last block as the call saw it (block calls; null or absent: not known). */
  readonly blockHash?: string | null;
}

/**
 * WriteRejected: the call's value cannot be written (not a list of rows, a row that does not fit
 * its table, a table store that is down). It fails the call with the code; `retryable` only for a
 * store that is down (STORE_UNAVAILABLE), never for the user's own value.
 */
export class WriteRejected extends Error {
  constructor(
    readonly code: CallErrorCode,
    message: string,
    readonly retryable = false,
  ) {
    super(message);
  }
}

/**
 * Writer is one output of a task (an OutputHandler of the Task). For each succeeded call during
 * EXECUTE, `stage` checks the value and returns the table writes it asks for; the TaskRunner
 * commits the writes of all the task's writers for that call in one transaction and then tells
 * each writer `committed`. `finish` is the WRITE phase, run once after every call succeeded. A
 * writer never sees a failed call, and never sees `committed` for writes that did not commit.
 */
export interface Writer {
  /** stage checks one succeeded call's value; throws WriteRejected when it cannot be written. */
  stage(call: WrittenCall): readonly TableWrite[];
  /** committed: the call's staged writes are durable; one outcome per staged write, in order. */
  committed(call: WrittenCall, outcomes: readonly ReplaceOutcome[]): void;
  /** finish is the WRITE phase: the writer's closing step. */
  finish(): void;
  /** The table summary for GetTaskResult, if this writer writes a table. */
  summary(): TableWriteSummary | undefined;
  /** The task's return values in input order, if this writer returns them. */
  returnValues(): readonly JsonValue[] | undefined;
}
