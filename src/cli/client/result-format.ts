import { parseExactJson } from "../../common/json/exact-json";
import { TaskResult, TaskSnapshot } from "../../gen/worker/v1/worker";
import { stateName, type RunResult } from "../../sdk/blockx-client";
import { exitCodeOfState } from "./exit-codes";

/** resultJson: a task's result as plain JSON for scripts (return values decoded, not base64). */
export function resultJson(result: TaskResult, run?: Pick<RunResult, "attempts" | "workers" | "cluster">): Record<string, unknown> {
  const snapshot = result.snapshot ? (TaskSnapshot.toJSON(result.snapshot) as Record<string, unknown>) : {};
  return {
    ...snapshot,
    state: stateName(result.snapshot?.state),
    returnValues: result.returnValues.map((b) => parseExactJson(b.toString("utf8")) as unknown),
    writes: result.writes,
    firstError: result.firstError ?? null,
    ...(run ? { attempts: run.attempts, workers: run.workers, cluster: run.cluster } : {}),
  };
}

/** resultText: the same for a person, as an aligned table. */
export function resultText(result: TaskResult, run?: Pick<RunResult, "attempts" | "workers">): string {
  const s = result.snapshot ?? TaskSnapshot.create();
  const rows: [string, string][] = [
    ["task", s.taskId],
    ["state", stateName(s.state) + (s.error?.code ? ` (${s.error.code}: ${s.error.message})` : "")],
    ["worker", s.workerAddr],
    ["calls", `${s.callsTotal} total, ${s.callsSucceeded} succeeded, ${s.callsFailed} failed, ${s.callsRetried} retried`],
  ];
  if (s.acceptedAtMs && s.finishedAtMs) rows.push(["duration", `${((s.finishedAtMs - s.acceptedAtMs) / 1000).toFixed(2)} s`]);
  if (run && run.attempts > 1) rows.push(["attempts", `${run.attempts} (workers ${run.workers.join(", ")})`]);
  for (const w of result.writes) rows.push(["wrote", `${w.rowsWritten} rows from ${w.callsWritten} calls to table ${w.table} (${w.handler})`]);
  const e = result.firstError;
  if (e?.code) {
    rows.push(["first error", `${e.code}: ${e.message}`], ["  call", `#${e.callIndex} ${e.callId} input ${e.callInput}`]);
  }
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`);
  if (e?.traceback) lines.push("", e.traceback.trimEnd());
  if (result.returnValues.length > 0) {
    lines.push("", `return values (${result.returnValues.length}):`);
    result.returnValues.slice(0, 50).forEach((b, i) => lines.push(`  [${i}] ${b.toString("utf8")}`));
    if (result.returnValues.length > 50) lines.push(`  ... ${result.returnValues.length - 50} more (use --json)`);
  }
  return lines.join("\n");
}

/** printResult prints a result (JSON or text) on stdout and returns the exit code of its state. */
export function printResult(json: boolean, result: TaskResult, run?: Pick<RunResult, "attempts" | "workers" | "cluster">): number {
  console.log(json ? JSON.stringify(resultJson(result, run)) : resultText(result, run));
  return exitCodeOfState(stateName(result.snapshot?.state));
}
