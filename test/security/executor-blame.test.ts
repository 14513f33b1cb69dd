/**
 * A hostile task that kills its executors (os._exit in every call) fails after CALL_MAX_ATTEMPTS
 * tries naming the cause, while a neighbour task sharing the same executors completes, and the
 * error rate the Worker publishes (ErrorRateWindow, fed exactly as worker/app/run.ts feeds it)
 * stays at 0, under the Coordinators' red line. Real parts: the TaskRunner, a sandboxed
 * ExecutorPool with real Python executors, the IO subsystem over the local test chain.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { monotonicNowMs } from "../../src/common/clock/monotonic-clock";
import { loadEnvConfig } from "../../src/common/config/env-config";
import { silentLogger } from "../../src/common/logging/logger";
import { MetricsRegistry } from "../../src/common/metrics/metrics";
import type { Task } from "../../src/gen/worker/v1/worker";
import { defaultExecutorPoolConfig } from "../../src/runtime/executor/executor-pool-config";
import { ExecutorPool } from "../../src/runtime/executor/executor-pool";
import { buildBackendSet, buildIoSubsystem } from "../../src/runtime/io/io-assembly";
import { FaultInjector } from "../../src/runtime/io/fault-injection";
import { ioSettingsFrom, ioVars } from "../../src/runtime/io/io-config";
import { blockWorkerProfile } from "../../src/worker/core/profile";
import { ErrorRateWindow } from "../../src/worker/adapters/error-rate-window";
import { TaskRunner, type TaskRunnerEvent } from "../../src/worker/adapters/task-runner";
import { planTask } from "../../src/worker/core/task-plan";
import { DEFAULT_RED_LINES } from "../../src/worker/core/heartbeat-schedule";

const MAX_ATTEMPTS = 3;
let pool: ExecutorPool;
let faults: FaultInjector;

beforeAll(async () => {
  // Two executors: the hostile task's calls and its neighbour's share them.
  pool = await ExecutorPool.start(defaultExecutorPoolConfig({ executorCount: 2 }), silentLogger(), { waitForAll: true });
});
afterAll(async () => {
  faults?.stop();
  await pool.close();
});

function task(taskId: string, source: string, inputs: unknown[]): Task {
  return {
    taskId,
    taskTimeoutMs: 0,
    functionCallConfig: {
      function: { name: "", source, entry: "", filename: "" },
      config: { $case: "inputs", inputs: { inputs: inputs.map((v) => Buffer.from(JSON.stringify(v))) } },
    },
    outputs: [{ handler: { $case: "returnValue", returnValue: {} } }],
  };
}

test("a task that kills its executors fails after CALL_MAX_ATTEMPTS naming the cause; its neighbour completes; the error rate stays 0", async () => {
  const settings = ioSettingsFrom(loadEnvConfig(ioVars, {}));
  faults = new FaultInjector(settings.localTestFaults, settings.localTestFaultsFile, silentLogger()).start();
  const { registry: backends } = buildBackendSet({ chains: settings.chains, localTestChain: { ...settings.localTestChain, enabled: true, head: 1000 }, faults, functions: () => null });
  const io = buildIoSubsystem(backends, settings.io, new MetricsRegistry());
  const runner = new TaskRunner({
    pool,
    dispatcher: { taskMaxInflightCalls: 4, maxInflightCalls: 64, maxAttempts: MAX_ATTEMPTS, retryBackoffBaseMs: 20, retryBackoffMaxMs: 100 },
    io,
    tables: null,
    log: silentLogger(),
    nowMs: monotonicNowMs,
  });
  const errors = new ErrorRateWindow();
  let systemFailures = 0;
  let finished = 0;
  runner.onCallFinished = (systemFailure) => {
    errors.record(systemFailure, Date.now());
    finished++;
    if (systemFailure) systemFailures++;
  };
  const ended = new Map<string, TaskRunnerEvent>();
  let wake = () => {};
  runner.onEvent = (e) => {
    if (e.type === "taskSucceeded" || e.type === "taskFailed") {
      ended.set(e.taskId, e);
      wake();
    }
  };

  const hostile = task("hostile", "import os, time\ndef main(ctx, x):\n    time.sleep(0.05)\n    os._exit(7)\n", [1, 2, 3, 4]);
  const neighbour = task("neighbour", "import time\ndef main(ctx, x):\n    time.sleep(0.02)\n    return x * 2\n", Array.from({ length: 24 }, (_, i) => i));
  for (const t of [hostile, neighbour]) {
    expect(runner.accept(planTask(t, blockWorkerProfile, null))).toBe(true);
    runner.start(t.taskId);
  }
  while (ended.size < 2) await new Promise<void>((resolve) => ((wake = resolve), setTimeout(resolve, 200)));

  const h = ended.get("hostile")!;
  expect(h.type).toBe("taskFailed");
  const message = (h as Extract<TaskRunnerEvent, { type: "taskFailed" }>).error.message;
  expect(message).toContain("exit code 7");
  expect(message).toContain(`(after ${MAX_ATTEMPTS} attempts)`);
  expect(ended.get("neighbour")!.type).toBe("taskSucceeded");
  expect(runner.result("neighbour")!.returnValues).toEqual(Array.from({ length: 24 }, (_, i) => i * 2));
  // Executor deaths were charged to the calls that ran on them, never to the Worker.
  expect(finished).toBeGreaterThan(24 + MAX_ATTEMPTS);
  expect(systemFailures).toBe(0);
  expect(errors.rate(Date.now())).toBeLessThan(DEFAULT_RED_LINES.errorRate);
}, 120_000);
