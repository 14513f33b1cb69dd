import { parseExactJson } from "../../common/json/exact-json";
import type { DebugInvokeResponse, InvokeResponse } from "../../gen/syncinvoker/v1/sync_invoker";
import { DebugInvokeResponse as DebugJson, InvokeResponse as InvokeJson, PrecheckResponse } from "../../gen/syncinvoker/v1/sync_invoker";
import { UsageError } from "../usage-error";
import { flagValue, intFlag, type ParsedArgs } from "../args";
import type { ClientCommandRun } from "./client-command";
import { EXIT } from "./exit-codes";
import { functionRefFrom, readJsonArg } from "./task-from-args";

function fnFrom(args: ParsedArgs, name: string) {
  const spec = flagValue(args, "function") ?? args.positional[0];
  if (!spec) throw new UsageError(`usage: blockx ${name} --function FILE|NAME [--entry NAME]`);
  return functionRefFrom(spec, flagValue(args, "entry") ?? "main");
}

function isDebug(r: InvokeResponse | DebugInvokeResponse): r is DebugInvokeResponse {
  return "ioTrace" in r;
}

export const invokeRun: ClientCommandRun = async (args, client) => {
  const fn = fnFrom(args, "invoke");
  const input = args.flags.has("args") ? readJsonArg("args", flagValue(args, "args")!) : null;
  const r = await client.invoke(fn, input, { timeoutMs: intFlag(args, "timeout-ms", 0), debug: args.flags.has("debug") });
  const failed = !!r.error?.code;
  if (args.flags.has("json")) {
    const json = (isDebug(r) ? DebugJson.toJSON(r) : InvokeJson.toJSON(r)) as Record<string, unknown>;
    console.log(JSON.stringify({ ...json, result: r.result.length > 0 ? (parseExactJson(r.result.toString("utf8")) as unknown) : null }));
  } else {
    if (isDebug(r)) {
      if (r.stdout) console.log(`--- stdout\n${r.stdout.trimEnd()}`);
      if (r.stderr) console.log(`--- stderr\n${r.stderr.trimEnd()}`);
      for (const l of r.logs) console.log(`log ${l.level}: ${l.message}`);
      for (const io of r.ioTrace) console.log(`io ${io.backend}.${io.op} ${io.durationMs.toFixed(2)} ms${io.cacheHit ? " (cache)" : ""}${io.error ? ` error: ${io.error}` : ""}`);
    }
    if (failed) console.log(`error ${r.error!.code}: ${r.error!.message}${r.error!.traceback ? `\n${r.error!.traceback.trimEnd()}` : ""}`);
    else console.log(r.result.toString("utf8"));
    const d = r.durations;
    if (d) console.error(`call ${r.callId}: total ${d.totalMs.toFixed(1)} ms (queue ${d.queueMs.toFixed(1)}, cpu ${d.cpuMs.toFixed(1)}, io ${d.ioMs.toFixed(1)})`);
  }
  return failed ? EXIT.TASK_FAILED : EXIT.OK;
};

export const precheckRun: ClientCommandRun = async (args, client) => {
  const r = await client.precheck(fnFrom(args, "precheck"));
  if (args.flags.has("json")) console.log(JSON.stringify(PrecheckResponse.toJSON(r)));
  else {
    for (const d of r.diagnostics) console.log(`${d.line}:${d.column}: ${d.severity}: ${d.message}${d.code ? ` [${d.code}]` : ""}`);
    console.log(r.ok ? `ok (entry ${r.entry}, sha256 ${r.digest})` : "precheck failed");
  }
  return r.ok ? EXIT.OK : EXIT.TASK_FAILED;
};
