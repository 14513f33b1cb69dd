import { describe, expect, test } from "bun:test";
import { ErrorCode } from "../../common/error-code";
import type { WorkerHeartbeat } from "../../common/registry/worker-heartbeat";
import { type CoordinatorCoreConfig, defaultCoordinatorCoreConfig } from "./config";
import { candidateRanksBefore, CoordinatorCore } from "./coordinator-core";
import type { CoordinatorError } from "./coordinator-error";
import { freeCapacity, newWorkerView, usedTotal } from "./worker-view";
import { validated } from "../../../test/support/validated";

// Defaults: heartbeatTimeoutMs 10_000, watchGracePeriodMs 10_000, breaker 3 failures / 10_000 ms,
// red lines cpu 0.9, memory 0.9, error rate 0.5.
const T0 = 1_700_000_000_000;
const NONE: ReadonlySet<string> = new Set();

/** hb is a healthy heartbeat: 8 slots, all free, beating at T0. */
function hb(workerAddr: string, over: Partial<WorkerHeartbeat> = {}): WorkerHeartbeat {
  return {
    workerAddr,
    taskSlots: 8,
    reservedSlots: 0,
    runningTasks: 0,
    cpuPercent: 0.2,
    memoryPercent: 0.3,
    memoryAvailableBytes: 1 << 30,
    memoryTotalBytes: 4 << 30,
    processRssBytes: 1 << 28,
    errorRate: 0,
    lastHeartbeatMs: T0,
    ...over,
  };
}

/**
 * checkedCore is a fresh CoordinatorCore that runs validateState() after every method call, so
 * every step of every scenario checks the invariants.
 */
function checkedCore(over: Partial<CoordinatorCoreConfig> = {}): CoordinatorCore {
  return validated(new CoordinatorCore({ ...defaultCoordinatorCoreConfig(), ...over }));
}

/** coreWith is a checked core initialised with `workers` at T0. */
function coreWith(workers: WorkerHeartbeat[], over: Partial<CoordinatorCoreConfig> = {}): CoordinatorCore {
  const core = checkedCore(over);
  core.handle({ type: "workerListLoaded", workers }, T0);
  return core;
}

function pick(core: CoordinatorCore, nowMs: number, exclude: ReadonlySet<string> = NONE): string {
  const r = core.handle({ type: "candidateRequested", taskId: "task-1", excludeAddrs: exclude }, nowMs).reply;
  if (r.err !== undefined) throw new Error(`expected a pick, got ${r.err.message}`);
  return r.workerAddr;
}

function failure(core: CoordinatorCore, nowMs: number, exclude: ReadonlySet<string> = NONE): CoordinatorError {
  const r = core.handle({ type: "candidateRequested", taskId: "task-1", excludeAddrs: exclude }, nowMs).reply;
  if (r.err === undefined) throw new Error(`expected an error, got ${r.workerAddr}`);
  return r.err;
}

describe("validateReserveRequest (see validate.test.ts) and construction", () => {
  test("an operator who sets the grace period above the heartbeat timeout gets an error at start-up", () => {
    expect(() => new CoordinatorCore({ ...defaultCoordinatorCoreConfig(), watchGracePeriodMs: 20_000 })).toThrow(
      /watchGracePeriodMs: must be <= heartbeatTimeoutMs/,
    );
  });

  test("the worker-view helpers count reserved and running slots as used; free capacity may go negative", () => {
    const v = newWorkerView(hb("w1", { taskSlots: 4, reservedSlots: 3, runningTasks: 2 }));
    expect(usedTotal(v)).toBe(5);
    expect(freeCapacity(v)).toBe(-1);
    expect([v.circuitBreakerDeadlineMs, v.recentFailureCount, v.penalty]).toEqual([0, 0, 0]);
  });
});

describe("readiness", () => {
  test("a Coordinator that just started and has not listed etcd yet refuses requests", () => {
    const core = checkedCore();
    expect(core.isReady(T0)).toBe(false);
    expect(core.readinessError(T0)?.code).toBe(ErrorCode.ErrUnavailable);
    // Updates before the first full list build the view but do not make it trusted.
    core.handle({ type: "workerUpdated", heartbeat: hb("w1") }, T0);
    expect(core.isInitialized()).toBe(false);
    expect(core.isReady(T0)).toBe(false);
    const err = failure(core, T0);
    expect(err.code).toBe(ErrorCode.ErrUnavailable);
    expect(err.message).toBe(
      "[UNAVAILABLE] the worker view is not initialized yet: no full worker list has been received from etcd",
    );
  });

  test("the first full list, even an empty one, makes the Coordinator ready", () => {
    const core = checkedCore();
    core.handle({ type: "workerListLoaded", workers: [] }, T0);
    expect(core.isInitialized()).toBe(true);
    expect(core.isReady(T0)).toBe(true);
    expect(core.readinessError(T0)).toBeNull();
  });

  test("an etcd blip shorter than the grace period keeps routing; one past it stops routing", () => {
    const core = coreWith([hb("w1")]);
    core.handle({ type: "watchDisconnected" }, T0 + 1_000);
    expect(core.watchDisconnectedSinceMs()).toBe(T0 + 1_000);
    expect(core.isReady(T0 + 5_000)).toBe(true);
    // Exactly at the grace period is still ready: the rule is `now - disconnectedAt > grace`.
    expect(core.isReady(T0 + 11_000)).toBe(true);
    expect(pick(core, T0 + 10_000)).toBe("w1");
    expect(core.isReady(T0 + 11_001)).toBe(false);
    const err = failure(core, T0 + 11_001);
    expect(err.code).toBe(ErrorCode.ErrUnavailable);
    expect(err.message).toBe(
      "[UNAVAILABLE] the etcd watch has been disconnected for 10001 ms, longer than the 10000 ms grace period; the worker view is not trusted",
    );
    expect(core.readinessError(T0 + 11_001)?.message).toBe(err.message);
  });

  test("a second prefix's watch breaking later does not restart the grace period", () => {
    const core = coreWith([hb("w1")]);
    core.handle({ type: "watchDisconnected" }, T0 + 1_000);
    core.handle({ type: "watchDisconnected" }, T0 + 8_000);
    expect(core.watchDisconnectedSinceMs()).toBe(T0 + 1_000);
    expect(core.isReady(T0 + 11_001)).toBe(false);
  });

  test("once every watch is back the view is trusted again, and a new outage gets a fresh grace period", () => {
    const core = coreWith([hb("w1")]);
    core.handle({ type: "watchDisconnected" }, T0);
    expect(core.isReady(T0 + 20_000)).toBe(false);
    core.handle({ type: "watchReconnected" }, T0 + 20_000);
    expect(core.watchDisconnectedSinceMs()).toBeNull();
    core.handle({ type: "workerUpdated", heartbeat: hb("w1", { lastHeartbeatMs: T0 + 20_000 }) }, T0 + 20_000);
    expect(core.isReady(T0 + 20_000)).toBe(true);
    expect(pick(core, T0 + 20_000)).toBe("w1");
    core.handle({ type: "watchDisconnected" }, T0 + 25_000);
    expect(core.isReady(T0 + 35_000)).toBe(true);
    expect(core.isReady(T0 + 35_001)).toBe(false);
  });

  test("once initialized, a Coordinator never goes back to uninitialized, even when every worker leaves", () => {
    const core = coreWith([hb("w1")]);
    core.handle({ type: "workerRemoved", workerAddr: "w1" }, T0);
    core.handle({ type: "workerListLoaded", workers: [] }, T0 + 1);
    expect(core.workerCount()).toBe(0);
    expect(core.isInitialized()).toBe(true);
    expect(core.isReady(T0 + 2)).toBe(true);
    expect(failure(core, T0 + 2).code).toBe(ErrorCode.ErrNoExecutableSlot);
  });
});

describe("hard filters", () => {
  test("a worker the request already tried is skipped for the next candidate", () => {
    const core = coreWith([hb("big", { taskSlots: 16 }), hb("small", { taskSlots: 2 })]);
    expect(pick(core, T0)).toBe("big");
    expect(pick(core, T0, new Set(["big"]))).toBe("small");
    const err = failure(core, T0, new Set(["big", "small", "not-in-view"]));
    expect(err.code).toBe(ErrorCode.ErrNoExecutableSlot);
    expect(err.message).toBe(
      "[NO_EXECUTABLE_SLOT] no worker with free capacity passes the filters (2 workers: 2 excluded (already tried))",
    );
  });

  test("a worker whose heartbeat is older than the timeout is skipped; exactly at the timeout it is still used", () => {
    const core = coreWith([
      hb("big", { taskSlots: 16, lastHeartbeatMs: T0 - 10_000 }),
      hb("small", { taskSlots: 2, lastHeartbeatMs: T0 }),
    ]);
    expect(pick(core, T0)).toBe("big"); // now - last = 10_000, not > 10_000
    expect(pick(core, T0 + 1)).toBe("small");
    const err = failure(core, T0 + 1, new Set(["small"]));
    expect(err.code).toBe(ErrorCode.ErrNoExecutableSlot);
    expect(err.filterCounts).toMatchObject({ total: 2, excluded: 1, heartbeatStale: 1 });
  });

  test("a rack of high-capacity workers that stopped heartbeating does not hide a fresh small worker", () => {
    const dead = [16, 16, 16, 12, 12, 9].map((slots, i) => hb(`dead-${i}`, { taskSlots: slots, lastHeartbeatMs: T0 - 60_000 }));
    const core = coreWith([
      ...dead,
      hb("fresh-16-busy", { taskSlots: 16, runningTasks: 13, lastHeartbeatMs: T0 }),
      hb("fresh-9-old", { taskSlots: 9, lastHeartbeatMs: T0 - 9_000 }),
    ]);
    // Free 16 group: only dead; free 12: only dead; free 9: fresh-9-old (fresh) before dead-5.
    expect(pick(core, T0)).toBe("fresh-9-old");
    expect(pick(core, T0 + 1_001)).toBe("fresh-16-busy"); // fresh-9-old went stale
  });

  const redLines = [
    ["cpuPercent", "cpuRedLine", 0.9, "over the CPU red line 0.9"],
    ["memoryPercent", "memoryRedLine", 0.9, "over the memory red line 0.9"],
    ["errorRate", "errorRateRedLine", 0.5, "over the error-rate red line 0.5"],
  ] as const;
  for (const [field, configName, line, words] of redLines) {
    test(`a worker whose ${field} is above the red line is skipped; exactly at the line it is used`, () => {
      const core = coreWith([hb("big", { taskSlots: 16, [field]: line + 0.01 }), hb("small", { taskSlots: 2 })]);
      expect(pick(core, T0)).toBe("small");
      const err = failure(core, T0, new Set(["small"]));
      expect(err.message).toBe(`[NO_EXECUTABLE_SLOT] no worker with free capacity passes the filters (2 workers: 1 excluded (already tried), 1 ${words})`);
      core.handle({ type: "workerUpdated", heartbeat: hb("big", { taskSlots: 16, [field]: line }) }, T0);
      expect(pick(core, T0)).toBe("big");
    });

    test(`with ${configName} = 1 a worker at 100% ${field} is still used (the filter is off)`, () => {
      const core = coreWith([hb("big", { taskSlots: 16, [field]: 1 }), hb("small", { taskSlots: 2 })], { [configName]: 1 });
      expect(pick(core, T0)).toBe("big");
    });
  }

  test("a worker with an open breaker is skipped until exactly its deadline", () => {
    const core = coreWith([hb("flaky", { taskSlots: 16 }), hb("steady", { taskSlots: 2 })]);
    for (let i = 0; i < 3; i++) core.handle({ type: "slotRejected", workerAddr: "flaky" }, T0 + 100);
    expect(core.getWorkerView("flaky")?.circuitBreakerDeadlineMs).toBe(T0 + 10_100);
    core.handle({ type: "workerUpdated", heartbeat: hb("flaky", { taskSlots: 16, lastHeartbeatMs: T0 + 5_000 }) }, T0 + 5_000);
    core.handle({ type: "workerUpdated", heartbeat: hb("steady", { taskSlots: 2, lastHeartbeatMs: T0 + 5_000 }) }, T0 + 5_000);
    expect(pick(core, T0 + 5_000)).toBe("steady");
    expect(pick(core, T0 + 10_099)).toBe("steady");
    const err = failure(core, T0 + 10_099, new Set(["steady"]));
    expect(err.message).toContain("(2 workers: 1 excluded (already tried), 1 circuit breaker open)");
    expect(pick(core, T0 + 10_100)).toBe("flaky"); // now < deadline is false at the deadline
  });

  test("a full worker (no free slot) and an over-committed one (negative free capacity) are skipped", () => {
    const core = coreWith([
      hb("full", { taskSlots: 4, reservedSlots: 2, runningTasks: 2 }),
      hb("over", { taskSlots: 4, reservedSlots: 3, runningTasks: 2 }),
      hb("zero", { taskSlots: 0 }),
    ]);
    const err = failure(core, T0);
    expect(err.code).toBe(ErrorCode.ErrNoExecutableSlot);
    expect(err.message).toBe("[NO_EXECUTABLE_SLOT] no worker with free capacity passes the filters (3 workers: 3 without free capacity)");
    core.handle({ type: "workerUpdated", heartbeat: hb("over", { taskSlots: 4, reservedSlots: 1, runningTasks: 2 }) }, T0);
    expect(pick(core, T0)).toBe("over");
  });
});

describe("ranking (candidateRanksBefore)", () => {
  test("more free slots beat a newer heartbeat", () => {
    const core = coreWith([
      hb("roomy", { taskSlots: 8, runningTasks: 2, lastHeartbeatMs: T0 - 5_000 }),
      hb("busy", { taskSlots: 8, runningTasks: 5, lastHeartbeatMs: T0 }),
    ]);
    expect(pick(core, T0)).toBe("roomy");
  });

  test("with equal free slots the newer heartbeat wins, even against a smaller penalty and address", () => {
    const core = coreWith([hb("a", { lastHeartbeatMs: T0 - 1 }), hb("b", { lastHeartbeatMs: T0 })]);
    core.handle({ type: "slotRejected", workerAddr: "b" }, T0);
    expect(core.getWorkerView("b")?.penalty).toBe(1);
    expect(pick(core, T0)).toBe("b");
  });

  test("with equal free slots and heartbeats the smaller penalty wins, even against a smaller address", () => {
    const core = coreWith([hb("a"), hb("b")]);
    expect(pick(core, T0)).toBe("a");
    core.handle({ type: "slotUnconfirmed", workerAddr: "a" }, T0);
    expect(pick(core, T0)).toBe("b");
    core.handle({ type: "slotRejected", workerAddr: "b" }, T0);
    core.handle({ type: "slotRejected", workerAddr: "b" }, T0);
    expect(pick(core, T0)).toBe("a"); // penalty 1 < 2
  });

  test("a full tie is broken by the address as a plain string ('w-10' < 'w-9')", () => {
    const core = coreWith([hb("w-9"), hb("w-10"), hb("w-11")]);
    expect(pick(core, T0)).toBe("w-10");
    expect(pick(core, T0, new Set(["w-10"]))).toBe("w-11");
    expect(pick(core, T0, new Set(["w-10", "w-11"]))).toBe("w-9");
  });

  test("candidateRanksBefore is a strict order over each key in turn", () => {
    const v = (addr: string, over: Partial<WorkerHeartbeat>, penalty = 0) => ({ ...newWorkerView(hb(addr, over)), penalty });
    expect(candidateRanksBefore(v("z", { runningTasks: 1 }), v("a", { runningTasks: 2 }))).toBe(true);
    expect(candidateRanksBefore(v("a", { runningTasks: 2 }), v("z", { runningTasks: 1 }))).toBe(false);
    expect(candidateRanksBefore(v("z", { lastHeartbeatMs: 2 }, 9), v("a", { lastHeartbeatMs: 1 }))).toBe(true);
    expect(candidateRanksBefore(v("z", {}, 1), v("a", {}, 2))).toBe(true);
    expect(candidateRanksBefore(v("a", {}, 2), v("z", {}, 1))).toBe(false);
    expect(candidateRanksBefore(v("a", {}), v("b", {}))).toBe(true);
    expect(candidateRanksBefore(v("a", {}), v("a", {}))).toBe(false);
  });
});

describe("feedback, penalty and circuit breaker", () => {
  // Heartbeats stay fresh for a minute here, so that only the breaker decides.
  const LONG_HEARTBEATS = { heartbeatTimeoutMs: 60_000 };

  test("a worker that rejects twice is only penalised; the third failure opens its breaker for the cooldown", () => {
    const core = coreWith([hb("flaky", { taskSlots: 16 }), hb("steady", { taskSlots: 2 })], LONG_HEARTBEATS);
    core.handle({ type: "slotRejected", workerAddr: "flaky" }, T0);
    core.handle({ type: "slotRejected", workerAddr: "flaky" }, T0 + 1);
    expect(core.getWorkerView("flaky")).toMatchObject({ recentFailureCount: 2, penalty: 2, circuitBreakerDeadlineMs: 0 });
    expect(pick(core, T0 + 2)).toBe("flaky");
    core.handle({ type: "slotRejected", workerAddr: "flaky" }, T0 + 2);
    expect(core.getWorkerView("flaky")).toMatchObject({ recentFailureCount: 3, penalty: 3, circuitBreakerDeadlineMs: T0 + 10_002 });
    expect(pick(core, T0 + 2)).toBe("steady");
    expect(pick(core, T0 + 10_001)).toBe("steady");
    expect(pick(core, T0 + 10_002)).toBe("flaky");
  });

  test("timeouts and rejections both count toward the same breaker", () => {
    const core = coreWith([hb("flaky", { taskSlots: 16 }), hb("steady", { taskSlots: 2 })], LONG_HEARTBEATS);
    core.handle({ type: "slotUnconfirmed", workerAddr: "flaky" }, T0);
    core.handle({ type: "slotRejected", workerAddr: "flaky" }, T0);
    core.handle({ type: "slotUnconfirmed", workerAddr: "flaky" }, T0);
    expect(core.getWorkerView("flaky")?.circuitBreakerDeadlineMs).toBe(T0 + 10_000);
    expect(pick(core, T0)).toBe("steady");
  });

  test("a worker that is merely full (backpressure) is neither penalised nor broken", () => {
    const core = coreWith([hb("busy", { taskSlots: 16 }), hb("steady", { taskSlots: 2 })], LONG_HEARTBEATS);
    for (let i = 0; i < 10; i++) core.handle({ type: "workerWasFull", workerAddr: "busy" }, T0);
    expect(core.getWorkerView("busy")).toMatchObject({ recentFailureCount: 0, penalty: 0, circuitBreakerDeadlineMs: 0 });
    core.handle({ type: "slotRejected", workerAddr: "busy" }, T0);
    core.handle({ type: "workerWasFull", workerAddr: "busy" }, T0);
    core.handle({ type: "slotRejected", workerAddr: "busy" }, T0);
    expect(core.getWorkerView("busy")).toMatchObject({ recentFailureCount: 2, penalty: 2, circuitBreakerDeadlineMs: 0 });
    expect(pick(core, T0)).toBe("busy");
  });

  test("one success forgives everything: failure count, penalty and an open breaker", () => {
    const core = coreWith([hb("flaky", { taskSlots: 16 }), hb("steady", { taskSlots: 2 })], LONG_HEARTBEATS);
    for (let i = 0; i < 4; i++) core.handle({ type: "slotRejected", workerAddr: "flaky" }, T0);
    expect(pick(core, T0)).toBe("steady");
    core.handle({ type: "slotReserved", workerAddr: "flaky" }, T0 + 1);
    expect(core.getWorkerView("flaky")).toMatchObject({ recentFailureCount: 0, penalty: 0, circuitBreakerDeadlineMs: 0 });
    expect(pick(core, T0 + 1)).toBe("flaky");
    // And the count starts over: two more failures do not reopen it.
    core.handle({ type: "slotRejected", workerAddr: "flaky" }, T0 + 2);
    core.handle({ type: "slotRejected", workerAddr: "flaky" }, T0 + 2);
    expect(pick(core, T0 + 2)).toBe("flaky");
  });

  test("after the cooldown a worker that fails once more is broken again at once (the count is still over the threshold)", () => {
    const core = coreWith([hb("flaky", { taskSlots: 16 }), hb("steady", { taskSlots: 2 })], LONG_HEARTBEATS);
    for (let i = 0; i < 3; i++) core.handle({ type: "slotRejected", workerAddr: "flaky" }, T0);
    expect(pick(core, T0 + 10_000)).toBe("flaky");
    core.handle({ type: "slotUnconfirmed", workerAddr: "flaky" }, T0 + 10_000);
    expect(core.getWorkerView("flaky")).toMatchObject({ recentFailureCount: 4, penalty: 4, circuitBreakerDeadlineMs: T0 + 20_000 });
    expect(pick(core, T0 + 10_000)).toBe("steady");
    expect(pick(core, T0 + 20_000)).toBe("flaky");
  });

  test("a failure while the breaker is open moves the deadline to now + cooldown", () => {
    const core = coreWith([hb("flaky", { taskSlots: 16 }), hb("steady", { taskSlots: 2 })], LONG_HEARTBEATS);
    for (let i = 0; i < 3; i++) core.handle({ type: "slotRejected", workerAddr: "flaky" }, T0);
    expect(pick(core, T0 + 4_000)).toBe("steady");
    core.handle({ type: "slotRejected", workerAddr: "flaky" }, T0 + 4_000);
    expect(pick(core, T0 + 10_000)).toBe("steady");
    expect(pick(core, T0 + 13_999)).toBe("steady");
    expect(pick(core, T0 + 14_000)).toBe("flaky");
  });

  test("feedback about a worker that already left the view is ignored", () => {
    const core = coreWith([hb("w1")]);
    core.handle({ type: "slotRejected", workerAddr: "gone" }, T0);
    core.handle({ type: "slotUnconfirmed", workerAddr: "gone" }, T0);
    core.handle({ type: "slotReserved", workerAddr: "gone" }, T0);
    core.handle({ type: "workerWasFull", workerAddr: "gone" }, T0);
    expect(core.workerCount()).toBe(1);
    expect(core.getWorkerView("gone")).toBeUndefined();
  });
});

describe("view maintenance", () => {
  test("a re-list after a watch restart keeps what this Coordinator learned about surviving workers", () => {
    const core = coreWith([hb("flaky", { taskSlots: 16 }), hb("steady", { taskSlots: 2 }), hb("leaving")]);
    for (let i = 0; i < 3; i++) core.handle({ type: "slotRejected", workerAddr: "flaky" }, T0);
    core.handle({ type: "slotUnconfirmed", workerAddr: "leaving" }, T0);
    core.handle({ type: "workerListLoaded", workers: [hb("flaky", { taskSlots: 16, lastHeartbeatMs: T0 + 500 }), hb("steady", { taskSlots: 2, lastHeartbeatMs: T0 + 500 })] }, T0 + 500);
    expect(core.workerCount()).toBe(2);
    expect(core.getWorkerView("leaving")).toBeUndefined();
    expect(core.getWorkerView("flaky")).toMatchObject({
      lastHeartbeatMs: T0 + 500,
      recentFailureCount: 3,
      penalty: 3,
      circuitBreakerDeadlineMs: T0 + 10_000,
    });
    expect(pick(core, T0 + 500)).toBe("steady");
    expect(pick(core, T0 + 10_000)).toBe("flaky");
    // The dropped worker comes back later: it starts from zero.
    core.handle({ type: "workerUpdated", heartbeat: hb("leaving", { lastHeartbeatMs: T0 + 600 }) }, T0 + 600);
    expect(core.getWorkerView("leaving")).toMatchObject({ recentFailureCount: 0, penalty: 0, circuitBreakerDeadlineMs: 0 });
  });

  test("a worker that restarts (key deleted, then put again) starts with a clean record", () => {
    const core = coreWith([hb("w1", { taskSlots: 16 }), hb("w2", { taskSlots: 2 })]);
    for (let i = 0; i < 3; i++) core.handle({ type: "slotUnconfirmed", workerAddr: "w1" }, T0);
    core.handle({ type: "workerRemoved", workerAddr: "w1" }, T0 + 1);
    expect(core.getWorkerView("w1")).toBeUndefined();
    expect(core.workerCount()).toBe(1);
    core.handle({ type: "workerRemoved", workerAddr: "w1" }, T0 + 1); // removing twice is harmless
    core.handle({ type: "workerUpdated", heartbeat: hb("w1", { taskSlots: 16, lastHeartbeatMs: T0 + 2 }) }, T0 + 2);
    expect(core.getWorkerView("w1")).toMatchObject({ recentFailureCount: 0, penalty: 0, circuitBreakerDeadlineMs: 0 });
    expect(pick(core, T0 + 2)).toBe("w1");
  });

  test("a new worker announced by the watch is used at once, and its view is a copy of the heartbeat", () => {
    const core = coreWith([hb("w1", { taskSlots: 2 })]);
    const beat = hb("w2", { taskSlots: 4 });
    core.handle({ type: "workerUpdated", heartbeat: beat }, T0);
    beat.taskSlots = 0; // the caller reusing its object must not change the view
    expect(core.getWorkerView("w2")?.taskSlots).toBe(4);
    expect(pick(core, T0)).toBe("w2");
    expect([...core.workers()].map((v) => v.workerAddr).sort()).toEqual(["w1", "w2"]);
  });

  test("a duplicated address in a full list keeps the later heartbeat", () => {
    const core = coreWith([hb("w1", { taskSlots: 2 }), hb("w1", { taskSlots: 6 })]);
    expect(core.workerCount()).toBe(1);
    expect(core.getWorkerView("w1")?.taskSlots).toBe(6);
  });

  test("heartbeats that only change non-ranking fields leave the pick alone", () => {
    const core = coreWith([hb("a"), hb("b")]);
    core.handle({ type: "workerUpdated", heartbeat: hb("b", { cpuPercent: 0.5, memoryAvailableBytes: 7 }) }, T0);
    expect(core.getWorkerView("b")).toMatchObject({ cpuPercent: 0.5, memoryAvailableBytes: 7 });
    expect(pick(core, T0)).toBe("a");
    core.handle({ type: "workerUpdated", heartbeat: hb("b", { lastHeartbeatMs: T0 + 1 }) }, T0 + 1);
    expect(pick(core, T0 + 1)).toBe("b");
  });
});

describe("errors say why", () => {
  test("when every worker's heartbeat is stale the view is not trusted: UNAVAILABLE, not NO_EXECUTABLE_SLOT", () => {
    const core = coreWith([
      hb("w1", { lastHeartbeatMs: T0 - 1_000 }),
      hb("w2", { lastHeartbeatMs: T0 }),
      hb("w3", { lastHeartbeatMs: T0 - 5_000, taskSlots: 0 }),
    ]);
    const err = failure(core, T0 + 10_001, new Set(["w2"]));
    expect(err.code).toBe(ErrorCode.ErrUnavailable);
    expect(err.message).toBe(
      "[UNAVAILABLE] all 3 workers' heartbeats are older than 10000 ms (the newest is 10001 ms old); the worker view is not trusted",
    );
    expect(err.filterCounts).toBeUndefined();
  });

  test("a single stale worker is reported in the singular", () => {
    const core = coreWith([hb("w1")]);
    expect(failure(core, T0 + 10_001).message).toContain("the only worker's heartbeat is older than 10000 ms");
  });

  test("when the newest worker leaves, the staleness check looks at the remaining ones", () => {
    const core = coreWith([hb("old", { lastHeartbeatMs: T0 - 5_000 }), hb("new", { lastHeartbeatMs: T0 })]);
    expect(pick(core, T0 + 6_000)).toBe("new");
    core.handle({ type: "workerRemoved", workerAddr: "new" }, T0 + 6_000);
    expect(failure(core, T0 + 6_000).code).toBe(ErrorCode.ErrUnavailable);
    // A heartbeat that goes backwards (a merged registry) is also taken into account.
    core.handle({ type: "workerUpdated", heartbeat: hb("new", { lastHeartbeatMs: T0 + 6_000 }) }, T0 + 6_000);
    expect(pick(core, T0 + 6_000)).toBe("new");
    core.handle({ type: "workerUpdated", heartbeat: hb("new", { lastHeartbeatMs: T0 - 4_001 }) }, T0 + 6_000);
    expect(failure(core, T0 + 6_000).code).toBe(ErrorCode.ErrUnavailable);
  });

  test("some stale and the rest unusable for other reasons is NO_EXECUTABLE_SLOT", () => {
    const core = coreWith([hb("stale", { lastHeartbeatMs: T0 - 20_000 }), hb("full", { runningTasks: 8 })]);
    const err = failure(core, T0);
    expect(err.code).toBe(ErrorCode.ErrNoExecutableSlot);
    expect(err.message).toBe(
      "[NO_EXECUTABLE_SLOT] no worker with free capacity passes the filters (2 workers: 1 without free capacity, 1 heartbeat older than 10000 ms)",
    );
  });

  test("an empty view after the first list is NO_EXECUTABLE_SLOT", () => {
    const core = coreWith([]);
    const err = failure(core, T0);
    expect(err.code).toBe(ErrorCode.ErrNoExecutableSlot);
    expect(err.message).toBe("[NO_EXECUTABLE_SLOT] the worker view is empty: no worker is registered in etcd");
  });

  test("an on-call engineer reading the error sees how many workers each filter removed", () => {
    const core = coreWith([
      hb("tried-1"),
      hb("tried-2", { cpuPercent: 0.99 }),
      hb("hot-1", { cpuPercent: 0.95 }),
      hb("hot-2", { cpuPercent: 0.95, memoryPercent: 0.95 }),
      hb("swapping", { memoryPercent: 0.95 }),
      hb("erroring-1", { errorRate: 0.7 }),
      hb("erroring-2", { errorRate: 0.7, lastHeartbeatMs: T0 - 30_000 }),
      hb("full-1", { runningTasks: 8 }),
      hb("full-2", { reservedSlots: 4, runningTasks: 4 }),
      hb("full-3", { reservedSlots: 9 }),
      hb("broken-1"),
      hb("broken-2"),
      hb("silent-1", { lastHeartbeatMs: T0 - 30_000 }),
    ]);
    for (const w of ["broken-1", "broken-2"]) for (let i = 0; i < 3; i++) core.handle({ type: "slotRejected", workerAddr: w }, T0);
    const err = failure(core, T0 + 1, new Set(["tried-1", "tried-2"]));
    expect(err.code).toBe(ErrorCode.ErrNoExecutableSlot);
    expect(err.message).toBe(
      "[NO_EXECUTABLE_SLOT] no worker with free capacity passes the filters (13 workers: 2 excluded (already tried), " +
        "2 over the CPU red line 0.9, 1 over the memory red line 0.9, 2 over the error-rate red line 0.5, " +
        "3 without free capacity, 2 circuit breaker open, 1 heartbeat older than 10000 ms)",
    );
    expect(err.filterCounts).toEqual({
      total: 13,
      excluded: 2,
      overCpuRedLine: 2,
      overMemoryRedLine: 1,
      overErrorRateRedLine: 2,
      noFreeCapacity: 3,
      breakerOpen: 2,
      heartbeatStale: 1,
    });
    // A clock one step back (behind the previous decision) reports the same.
    expect(failure(core, T0, new Set(["tried-1", "tried-2"])).filterCounts).toEqual(err.filterCounts);
  });

  test("a wall clock stepping backwards re-opens a breaker that had expired", () => {
    const core = coreWith([hb("flaky", { taskSlots: 16 }), hb("steady", { taskSlots: 2 })]);
    for (let i = 0; i < 3; i++) core.handle({ type: "slotRejected", workerAddr: "flaky" }, T0);
    expect(pick(core, T0 + 10_000)).toBe("flaky");
    expect(pick(core, T0 + 9_999)).toBe("steady");
    const err = failure(core, T0 + 9_999, new Set(["steady"]));
    expect(err.filterCounts).toMatchObject({ excluded: 1, breakerOpen: 1, heartbeatStale: 0 });
  });

  test("the taskId does not influence the pick", () => {
    const core = coreWith([hb("a"), hb("b"), hb("c")]);
    const picks = new Set(["t1", "t2", "another-task", ""].map((t) => core.handle({ type: "candidateRequested", taskId: t, excludeAddrs: NONE }, T0).reply.workerAddr));
    expect([...picks]).toEqual(["a"]);
  });
});

describe("validateState", () => {
  test("it notices a corrupted counter (so the checks after every step can fail)", () => {
    const core = new CoordinatorCore(defaultCoordinatorCoreConfig());
    core.handle({ type: "workerListLoaded", workers: [hb("w1", { cpuPercent: 0.99 })] }, T0);
    core.validateState();
    (core as unknown as { overCpuCount: number }).overCpuCount += 1;
    expect(() => core.validateState()).toThrow(/overCpuCount is 2, actual 1/);
  });

  test("it notices a record whose rank key changed behind the index's back", () => {
    const core = new CoordinatorCore(defaultCoordinatorCoreConfig());
    core.handle({ type: "workerListLoaded", workers: [hb("w1"), hb("w2", { taskSlots: 4 })] }, T0);
    const rec = (core as unknown as { records: Map<string, { free: number; taskSlots: number }> }).records.get("w2");
    if (rec === undefined) throw new Error("w2 missing");
    rec.taskSlots = 16;
    rec.free = 16;
    expect(() => core.validateState()).toThrow(/entries out of order/);
  });
});
