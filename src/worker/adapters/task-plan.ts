import { createHash } from "node:crypto";
import { ErrorCode } from "../../common/error-code";
import type { Task } from "../../gen/worker/v1/worker";
import type { CallFunction } from "../executor/call";
import type { JsonValue } from "../executor/protocol";
import type { WorkerProfile } from "../app/profile";
import { WorkerError } from "../core/worker-error";
import { MAX_TASK_TIMEOUT_MS } from "../core/config";

/** TaskPlan is a validated Task: what the runner needs, nothing from the wire. */
export interface TaskPlan {
  readonly taskId: string;
  readonly timeoutMs: number;
  readonly fn: CallFunction & { readonly digest: string };
  /** One JSON input per call (InputsCallConfig). */
  readonly inputs: readonly JsonValue[];
  readonly returnValues: boolean;
}

const MAX_TASK_ID_LENGTH = 256;

function invalid(message: string): WorkerError {
  return new WorkerError(ErrorCode.ErrInvalidArgument, message);
}

/**
 * planTask validates a SubmitTask's task for this Worker's profile and turns it into a plan.
 * Every rejection names the field (`task.function_call_config.inputs.inputs[3]: ...`).
 * Call configs and writers of later issues (block ranges, tables, functions by name) are
 * refused with a message that says so rather than half-run.
 */
export function planTask(task: Task | undefined, profile: WorkerProfile): TaskPlan {
  if (!task) throw invalid("task: required");
  if (task.taskId === "") throw invalid("task.task_id: required");
  if (task.taskId.length > MAX_TASK_ID_LENGTH) throw invalid(`task.task_id: at most ${MAX_TASK_ID_LENGTH} characters, got ${task.taskId.length}`);
  if (task.taskTimeoutMs > MAX_TASK_TIMEOUT_MS) throw invalid(`task.task_timeout_ms: at most ${MAX_TASK_TIMEOUT_MS} (8 h), got ${task.taskTimeoutMs}`);
  const fcc = task.functionCallConfig;
  if (!fcc) throw invalid("task.function_call_config: required");
  const f = fcc.function;
  if (!f) throw invalid("task.function_call_config.function: required");
  if (f.name !== "" && f.source !== "") throw invalid("task.function_call_config.function: give either name or source, not both");
  if (f.name !== "") throw invalid("task.function_call_config.function.name: functions by name need the Function Code View, which this Worker does not have yet; send source");
  if (f.source === "") throw invalid("task.function_call_config.function: name or source is required");
  const entry = f.entry || "main";
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(entry)) throw invalid(`task.function_call_config.function.entry: not a Python identifier: ${JSON.stringify(entry)}`);

  const config = fcc.config;
  if (!config) throw invalid("task.function_call_config: one of block_table, inputs, block_bundle is required");
  if (!profile.callConfigs.includes(config.$case)) {
    throw invalid(`task.function_call_config.${snake(config.$case)}: the ${profile.deployment} cluster does not run this call config`);
  }
  if (config.$case !== "inputs") throw invalid(`task.function_call_config.${snake(config.$case)}: not supported by this Worker yet`);
  const inputs = config.inputs.inputs.map((raw, i) => {
    try {
      return JSON.parse(Buffer.from(raw).toString("utf8")) as JsonValue;
    } catch (e) {
      throw invalid(`task.function_call_config.inputs.inputs[${i}]: not JSON: ${(e as Error).message}`);
    }
  });

  if (task.outputs.length === 0) throw invalid("task.outputs: at least one output is required");
  let returnValues = false;
  task.outputs.forEach((o, i) => {
    const h = o.handler;
    if (!h) throw invalid(`task.outputs[${i}]: one of block_table_write, normal_table_write, return_value is required`);
    if (!profile.outputs.includes(h.$case)) throw invalid(`task.outputs[${i}].${snake(h.$case)}: the ${profile.deployment} cluster does not run this writer`);
    if (h.$case !== "returnValue") throw invalid(`task.outputs[${i}].${snake(h.$case)}: not supported by this Worker yet`);
    returnValues = true;
  });

  const digest = createHash("sha256").update(f.source).digest("hex");
  return { taskId: task.taskId, timeoutMs: task.taskTimeoutMs, fn: { source: f.source, entry, digest }, inputs, returnValues };
}

function snake(s: string): string {
  return s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
