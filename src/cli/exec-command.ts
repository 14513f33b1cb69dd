import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { envVar, intSchema, loadEnvConfig } from "../common/config/env-config";
import { commonVars } from "../common/config/common-vars";
import { createLogger } from "../common/logging/logger";
import type { CallOutcome, CallOwner } from "../worker/executor/call";
import { executorPoolConfigFrom, executorPoolVars } from "../worker/executor/executor-pool-config";
import type { JsonValue, ResumeResult } from "../worker/executor/protocol";
import { ioSettingsFrom, ioVars } from "../worker/io/io-config";
import type { Command } from "./command";

/** Sub-calls deeper than this fail, so that a function calling itself cannot run away. */
const MAX_SUB_CALL_DEPTH = 8;

const vars = {
  ...executorPoolVars,
  ...ioVars,
  localTestChainHead: envVar("LOCALTESTSERVICE_HEAD", "20000000", "an integer from 0 to 1000000000", "highest block of the synthetic local test chain", intSchema(0, 1_000_000_000)),
  logLevel: commonVars.logLevel,
};

/**
 * `blockx exec FILE [INPUT_JSON]` runs one call of FILE's `main(ctx, input)` through a real
 * executor pool on this machine, with no cluster: the quickest way to try a function, and the
 * proof that the binary carries its executor. Sub-calls by name load `<name>.py` beside FILE.
 * IO goes through the Sync Invoker's read-only IO over the same backend set (the local test
 * chain, or the chains of CHAINS_CONFIG): a write op is refused with PermissionDenied.
 */
export const execCommand: Command = {
  name: "exec",
  summary: "run one call of a Python function locally through an executor pool: exec FILE [INPUT_JSON] [--entry NAME]",
  vars,
  async run(argv) {
    const positional: string[] = [];
    const flags: string[] = [];
    let entry = "main";
    for (let i = 0; i < argv.length; i++) {
      const a = argv[i]!;
      if (a === "--entry") entry = argv[++i] ?? "main";
      else if (a.startsWith("--entry=")) entry = a.slice("--entry=".length);
      else if (a.startsWith("--")) flags.push(a, ...(a.includes("=") ? [] : [argv[++i] ?? ""]));
      else positional.push(a);
    }
    const [file, inputText] = positional;
    if (!file) throw new UsageError("usage: blockx exec FILE [INPUT_JSON] [--entry NAME]");
    if (!existsSync(file)) throw new UsageError(`no such file: ${file}`);
    let input: JsonValue = null;
    if (inputText !== undefined) {
      try {
        input = JSON.parse(inputText) as JsonValue;
      } catch (e) {
        throw new UsageError(`INPUT_JSON is not JSON: ${(e as Error).message}`);
      }
    }
    const v = loadEnvConfig(vars, process.env, flags);
    const settings = ioSettingsFrom(v);
    const log = createLogger(v.logLevel, { role: "exec" });
    const [{ MetricsRegistry }, { FaultInjector }, { buildBackendSet, buildIoSubsystem }, { ReadOnlyIo }] = await Promise.all([
      import("../common/metrics/metrics"),
      import("../worker/io/fault-injection"),
      import("../worker/io/io-assembly"),
      import("../syncinvoker/adapters/read-only-io"),
    ]);
    const faults = new FaultInjector(settings.localTestFaults, settings.localTestFaultsFile, log.child({ component: "localtestservice" })).start();
    const { registry: backends } = buildBackendSet({ chains: settings.chains, localTestChainHead: v.localTestChainHead, faults, functions: () => null });
    const io = new ReadOnlyIo(buildIoSubsystem(backends, { ...settings.io, readOnly: true }, new MetricsRegistry()));
    const { ExecutorPool } = await import("../worker/executor/executor-pool");
    const pool = await ExecutorPool.start(executorPoolConfigFrom({ ...v, executorCount: Math.min(v.executorCount, 2) }), log);
    const dir = dirname(resolve(file));
    let seq = 0;
    const calls: { end(): void }[] = [];
    const ownerAt = (depth: number, callId: string): CallOwner => {
      const callIo = io.forCall({ callId, traced: false });
      calls.push(callIo);
      return {
        io: (req) => callIo.io(req),
        async subCall(req): Promise<ResumeResult> {
          if (depth >= MAX_SUB_CALL_DEPTH) return { ok: false, error: { type: "DEPTH_EXCEEDED", message: `sub-calls nest deeper than ${MAX_SUB_CALL_DEPTH}` } };
          const fn = "name" in req.function
            ? { source: readFileSync(join(dir, `${req.function.name}.py`), "utf8"), entry: "main" }
            : { source: req.function.source, entry: req.function.entry ?? "main" };
          const subId = `exec-${++seq}`;
          const out = await pool.execute({ callId: subId, fn, args: req.args }, ownerAt(depth + 1, subId));
          return out.ok ? { ok: true, value: out.value } : { ok: false, error: { type: out.error.code, message: out.error.message, traceback: out.error.traceback } };
        },
      };
    };
    let outcome: CallOutcome;
    try {
      outcome = await pool.execute({ callId: "exec-0", fn: { source: readFileSync(file, "utf8"), entry }, args: input }, ownerAt(0, "exec-0"));
    } finally {
      for (const c of calls) c.end();
      faults.stop();
      await pool.close();
    }
    console.log(JSON.stringify(outcome, null, 2));
    if (!outcome.ok) process.exitCode = 1;
  },
};

export class UsageError extends Error {}
