import { parseExactJson } from "../common/json/exact-json";
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { commonVars } from "../common/config/common-vars";
import { loadEnvConfig } from "../common/config/env-config";
import { createLogger } from "../common/logging/logger";
import { MetricsRegistry } from "../common/metrics/metrics";
import type { CallOutcome } from "../runtime/calls/call";
import { createCallOwner, runOnce } from "../runtime/calls/call-owner";
import { siblingFunctions } from "../runtime/functions/functions-dir";
import { executorPoolConfigFrom, executorPoolVars } from "../runtime/executor/executor-pool-config";
import type { JsonValue } from "../runtime/json/raw-json";
import { ioSettingsFrom, ioVars, localTestChainEnabledVar } from "../runtime/io/io-config";
import { flagValue } from "./args";
import type { Command } from "./command";
import { UsageError } from "./usage-error";

const vars = {
  ...executorPoolVars,
  ...ioVars,
  // A function tried on this machine reads the synthetic chain unless told otherwise.
  localTestChainEnabled: localTestChainEnabledVar("true"),
  logLevel: commonVars.logLevel,
};

/** The executor owner of `blockx exec`'s one request (its pool serves nothing else): every call has an owner. */
const EXEC_OWNER = "exec:request";

const USAGE = `usage: blockx exec FILE [INPUT_JSON] [--entry NAME] [--flags]

  FILE        a Python file defining the entry, called as entry(ctx, input)
  INPUT_JSON  the call's input as JSON (default null), e.g. '{"chain": "ethereum", "blockNumber": 1}'
  --entry     the function to call (default main)

Prints the outcome as JSON on stdout (value, cpuMs, output, logs, or the error with its traceback);
log lines go to stderr. Exit 0 when the call succeeded, 1 when it failed, 2 on a usage error.`;

/**
 * `blockx exec FILE [INPUT_JSON]` runs one call of FILE's `main(ctx, input)` through a real
 * executor pool on this machine, with no cluster: the quickest way to try a function, and the
 * proof that the binary carries its executor. IO is the Worker's IO subsystem over the same
 * backends (the local synthetic chain by default, the chains of CHAINS_CONFIG when set), read
 * only as in the Sync Invoker; sub-calls by name load `<name>.py` beside FILE. stdout carries
 * only the outcome; logs go to stderr.
 */
export const execCommand: Command = {
  name: "exec",
  summary: "run one call of a Python function locally through an executor pool and the local chain (or CHAINS_CONFIG): exec FILE [INPUT_JSON] [--entry NAME]",
  usage: USAGE,
  vars,
  flags: { entry: "value" },
  positionals: { required: ["FILE"], optional: ["INPUT_JSON"] },
  async run(args) {
    const [file, inputText] = args.positional as [string, string | undefined];
    const entry = flagValue(args, "entry") ?? "main";
    if (!existsSync(file)) throw new UsageError(`no such file: ${file}`);
    let input: JsonValue = null;
    if (inputText !== undefined) {
      try {
        input = parseExactJson(inputText) as JsonValue;
      } catch (e) {
        throw new UsageError(`INPUT_JSON is not JSON: ${(e as Error).message}`);
      }
    }
    const v = loadEnvConfig(vars, process.env, args.configArgv);
    const settings = ioSettingsFrom(v);
    const log = createLogger(v.logLevel, { role: "exec" }, 2);
    const [{ ExecutorPool }, { FaultInjector }, { buildBackendSet, buildIoSubsystem }] = await Promise.all([
      import("../runtime/executor/executor-pool"),
      import("../runtime/io/fault-injection"),
      import("../runtime/io/io-assembly"),
    ]);
    const faults = new FaultInjector(settings.localTestFaults, settings.localTestFaultsFile, log.child({ component: "localtestservice" })).start();
    const { registry: backends, localTestChain } = buildBackendSet({ ...settings, faults, functions: () => null });
    const io = buildIoSubsystem(backends, { ...settings.io, readOnly: true }, new MetricsRegistry());
    const taskIo = io.forTask("exec");
    const pool = await ExecutorPool.start(executorPoolConfigFrom({ ...v, executorCount: Math.min(v.executorCount, 2) }), log);
    const owner = createCallOwner({
      io: (req) => taskIo.call(req.backend, req.op, req.params).then((r) => r.answer),
      functions: siblingFunctions(dirname(resolve(file))),
      role: "exec",
      budgetMs: undefined,
      runSubCall: runOnce(pool),
      ownerKey: EXEC_OWNER,
    });
    let outcome: CallOutcome;
    try {
      outcome = await pool.execute({ callId: "exec-0", fn: { source: readFileSync(file, "utf8"), entry, filename: basename(file) }, args: input, ownerKey: EXEC_OWNER }, owner);
    } finally {
      taskIo.end();
      faults.stop();
      localTestChain?.close();
      await pool.close();
    }
    console.log(JSON.stringify(outcome, null, 2));
    if (!outcome.ok) process.exitCode = 1;
  },
};
