import { describe, expect, test } from "bun:test";
import { ErrorCode } from "../../common/error-code";
import { type TaskSnapshot, TaskPhase, TaskState } from "../../gen/worker/v1/worker";
import { DEFAULT_MAX_SLOT_TTL_MS, defaultWorkerCoreConfig, MAX_SLOT_TTL_MS, type WorkerCoreConfig } from "./config";
import { STORY_LIMIT, WorkerCore } from "./worker-core";
import type { Requester } from "./worker-core-events";
import type { SnapshotReply, WorkerDecision, WorkerInstruction } from "./worker-core-instructions";
import type { WorkerError } from "./worker-error";
import { validated } from "../../../test/support/validated";

const T0 = 1_700_000_000_000;
const ADDR = "10.0.0.7:7070";
const INC = "inc1";

/**
 * checkedCore is a fresh WorkerCore (3 slots, retention 300 s, incarnation "inc1") that runs
 * validateState() after every method call, so every step of every scenario checks the invariants.
 */
function checkedCore(over: Partial<WorkerCoreConfig> = {}, incarnation = INC): WorkerCore {
  return validated(new WorkerCore({ ...defaultWorkerCoreConfig(ADDR), taskSlots: 3, ...over }, incarnation));
}

/** ok returns the snapshot of a successful reply (and fails the test on an error reply). */
function ok(d: WorkerDecision<SnapshotReply>): TaskSnapshot {
  if (d.reply.err !== undefined) throw new Error(`expected a snapshot, got ${d.reply.err.message}`);
  return d.reply.snapshot;
}

/** err returns the error of a failed reply. */
function err(d: WorkerDecision<SnapshotReply>): WorkerError {
  if (d.reply.err === undefined) throw new Error(`expected an error, got a ${TaskState[d.reply.snapshot.state]} snapshot`);
  return d.reply.err;
}

/** brief renders instructions as short lines, so a test can assert the whole list at a glance. */
function brief(list: readonly WorkerInstruction[]): string[] {
  return list.map((i) => {
    switch (i.type) {
      case "publishSnapshot": {
        const s = i.snapshot;
        const phase = s.phase === TaskPhase.TASK_PHASE_UNSPECIFIED ? "" : ` ${TaskPhase[s.phase]}`;
        return `publish ${s.taskId} ${TaskState[s.state]}${phase}`;
      }
      case "startTask":
        return `start ${i.taskId} ${i.slotId} timeout=${i.timeoutMs} deadline=T0+${i.deadlineMs - T0}`;
      case "stopTask":
        return `stop ${i.taskId} ${i.reason}`;
      case "forgetTask":
        return `forget ${i.taskId} ${i.reason}`;
      case "reportDrained":
        return "drained";
    }
  });
}

function counts(core: WorkerCore): [number, number, number] {
  const c = core.slotCounts();
  return [c.reservedSlots, c.runningTasks, c.freeSlots];
}

describe("RequestTaskSlot", () => {
  test("a Coordinator reserving a slot for a new task gets an ALLOCATED snapshot with a fresh slot id", () => {
    const core = checkedCore();
    const d = core.requestTaskSlot("t1", 5_000, T0);
    const expected: TaskSnapshot = {
      taskId: "t1",
      slotId: "inc1.1",
      workerAddr: ADDR,
      state: TaskState.ALLOCATED,
      phase: TaskPhase.TASK_PHASE_UNSPECIFIED,
      callsTotal: 0,
      callsSucceeded: 0,
      callsFailed: 0,
      error: undefined,
      allocatedAtMs: T0,
      acceptedAtMs: 0,
      finishedAtMs: 0,
      updatedAtMs: T0,
      callsRetried: 0,
      deadlineMs: T0 + 5_000,
      outputs: undefined,
      runGeneration: 0,
    };
    expect(ok(d)).toEqual(expected);
    expect(d.instructions).toEqual([{ type: "publishSnapshot", snapshot: expected }]);
    expect(d.note).toBeUndefined();
    expect(core.slotCounts()).toEqual({ taskSlots: 3, reservedSlots: 1, runningTasks: 0, freeSlots: 2, retainedTasks: 0 });
    expect(ok(core.requestTaskSlot("t2", 5_000, T0)).slotId).toBe("inc1.2");
  });

  test("a Coordinator retrying after a timeout gets the same slot back, its expiry extended but never shortened", () => {
    const core = checkedCore();
    const first = ok(core.requestTaskSlot("t1", 5_000, T0));
    const retry = core.requestTaskSlot("t1", 5_000, T0 + 2_000);
    expect(ok(retry).slotId).toBe(first.slotId);
    expect(ok(retry).deadlineMs).toBe(T0 + 7_000);
    expect(ok(retry).updatedAtMs).toBe(T0 + 2_000);
    expect(brief(retry.instructions)).toEqual(["publish t1 ALLOCATED"]);
    // A retry asking for less time keeps the later expiry and changes nothing.
    const short = core.requestTaskSlot("t1", 1_000, T0 + 3_000);
    expect(ok(short).deadlineMs).toBe(T0 + 7_000);
    expect(short.instructions).toEqual([]);
    expect(counts(core)).toEqual([1, 0, 2]);
    // The slot now lives until T0 + 7000, not T0 + 5000.
    expect(core.tick(T0 + 6_999).instructions).toEqual([]);
    expect(brief(core.tick(T0 + 7_000).instructions)).toEqual(["forget t1 SLOT_EXPIRED"]);
  });

  test("a Coordinator that reserves for a task already running gets the task's snapshot with its slot id, not a new slot", () => {
    const core = checkedCore();
    const slot = ok(core.requestTaskSlot("t1", 5_000, T0)).slotId;
    ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, slot, T0 + 10));
    const d = core.requestTaskSlot("t1", 5_000, T0 + 20);
    expect(ok(d)).toMatchObject({ taskId: "t1", slotId: slot, state: TaskState.RUNNING, phase: TaskPhase.BUILD });
    expect(d.instructions).toEqual([]);
    expect(counts(core)).toEqual([0, 1, 2]);
  });

  test("a Coordinator that reserves for a task that already finished gets the retained snapshot with the slot id it held", () => {
    const core = checkedCore();
    ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0));
    core.handle({ type: "taskSucceeded", taskId: "t1" }, T0 + 100);
    const d = core.requestTaskSlot("t1", 5_000, T0 + 200);
    expect(ok(d)).toMatchObject({ slotId: "inc1.1", state: TaskState.SUCCEEDED });
    expect(d.instructions).toEqual([]);
    expect(counts(core)).toEqual([0, 0, 3]);
  });

  test("a full Worker answers NO_SLOT so that the Coordinator backs off, and the message says what holds the slots", () => {
    const core = checkedCore();
    core.requestTaskSlot("a", 5_000, T0);
    core.requestTaskSlot("b", 5_000, T0);
    ok(core.submitTask({ taskId: "c", timeoutMs: 0 }, "", T0));
    const e = err(core.requestTaskSlot("d", 5_000, T0 + 1));
    expect(e.code).toBe(ErrorCode.ErrNoSlot);
    expect(e.message).toBe("[NO_SLOT] all 3 task slots are in use (2 allocated, 1 running)");
    expect(err(core.submitTask({ taskId: "d", timeoutMs: 0 }, "", T0 + 1)).code).toBe(ErrorCode.ErrNoSlot);
    // A task that already holds a slot is still answered.
    expect(ok(core.requestTaskSlot("a", 5_000, T0 + 1)).slotId).toBe("inc1.1");
  });

  test("a malformed request is refused with INVALID_ARGUMENT naming the field", () => {
    const core = checkedCore({ maxSlotTtlMs: MAX_SLOT_TTL_MS });
    expect(err(core.requestTaskSlot("", 5_000, T0)).message).toBe("[INVALID_ARGUMENT] task_id is required");
    for (const ttl of [0, -1, 3_600_001, 1.5, Number.NaN]) {
      const e = err(core.requestTaskSlot("t1", ttl, T0));
      expect(e.code).toBe(ErrorCode.ErrInvalidArgument);
      expect(e.message).toBe(`[INVALID_ARGUMENT] ttl_ms: expected an integer in 1..3600000, got ${ttl}`);
    }
    expect(ok(core.requestTaskSlot("t1", 3_600_000, T0)).deadlineMs).toBe(T0 + 3_600_000);
    expect(core.taskCount()).toBe(1);
  });
});

describe("slot TTL", () => {
  test("a reserved slot nobody submits into is reclaimed exactly ttl_ms after allocation", () => {
    const core = checkedCore();
    ok(core.requestTaskSlot("t1", 5_000, T0));
    expect(core.nextDeadlineMs()).toBe(T0 + 5_000);
    expect(core.tick(T0 + 4_999).instructions).toEqual([]);
    expect(counts(core)).toEqual([1, 0, 2]);
    expect(brief(core.tick(T0 + 5_000).instructions)).toEqual(["forget t1 SLOT_EXPIRED"]);
    expect(counts(core)).toEqual([0, 0, 3]);
    expect(core.snapshotOf("t1")).toBeUndefined();
    expect(core.nextDeadlineMs()).toBeNull();
  });

  test("a client whose SubmitTask arrives one millisecond before the TTL runs out is accepted", () => {
    const core = checkedCore();
    const slot = ok(core.requestTaskSlot("t1", 5_000, T0)).slotId;
    expect(ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, slot, T0 + 4_999)).state).toBe(TaskState.RUNNING);
  });

  test("a client whose SubmitTask arrives at the TTL boundary, before the timer fired, gets SLOT_NOT_FOUND", () => {
    const core = checkedCore();
    const slot = ok(core.requestTaskSlot("t1", 5_000, T0)).slotId;
    const d = core.submitTask({ taskId: "t1", timeoutMs: 0 }, slot, T0 + 5_000);
    const e = err(d);
    expect(e.code).toBe(ErrorCode.ErrSlotNotFound);
    expect(e.message).toBe(
      "[SLOT_NOT_FOUND] slot inc1.1 is no longer allocated: its TTL expired without SubmitTask, or it was released",
    );
    // The expiry that was due is applied (and reported) in the same step.
    expect(brief(d.instructions)).toEqual(["forget t1 SLOT_EXPIRED"]);
    expect(counts(core)).toEqual([0, 0, 3]);
  });

  test("a Worker that restarted rejects the slot ids of its earlier incarnation", () => {
    const before = checkedCore({}, "inc1");
    const slot = ok(before.requestTaskSlot("t1", 5_000, T0)).slotId;
    const after = checkedCore({}, "inc2");
    const e = err(after.submitTask({ taskId: "t1", timeoutMs: 0 }, slot, T0 + 100));
    expect(e.code).toBe(ErrorCode.ErrSlotNotFound);
    expect(e.message).toBe(
      "[SLOT_NOT_FOUND] slot inc1.1 is from an earlier incarnation of this worker (it restarted since; current incarnation inc2)",
    );
    expect(counts(after)).toEqual([0, 0, 3]);
  });

  test("slot ids this Worker never issued are told apart from expired ones", () => {
    const core = checkedCore();
    core.requestTaskSlot("t1", 5_000, T0);
    expect(err(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "inc1.7", T0)).message).toBe(
      "[SLOT_NOT_FOUND] slot inc1.7 was never issued by this worker",
    );
    for (const bogus of ["garbage", "inc1.0", "inc1.01", ".1", "inc1.", "a.b.1"]) {
      const e = err(core.submitTask({ taskId: "t1", timeoutMs: 0 }, bogus, T0));
      expect(e.code).toBe(ErrorCode.ErrSlotNotFound);
      expect(e.message).toBe(`[SLOT_NOT_FOUND] slot ${JSON.stringify(bogus)} is not a slot id issued by this worker`);
    }
    expect(counts(core)).toEqual([1, 0, 2]);
  });

  test("a slot id is never reused: a task reserving again after its slot expired gets a new id", () => {
    const core = checkedCore();
    const first = ok(core.requestTaskSlot("t1", 5_000, T0)).slotId;
    const second = ok(core.requestTaskSlot("t1", 5_000, T0 + 5_000)).slotId;
    expect([first, second]).toEqual(["inc1.1", "inc1.2"]);
    // The old id stays dead even though the same task holds a slot again.
    expect(err(core.submitTask({ taskId: "t1", timeoutMs: 0 }, first, T0 + 5_001)).code).toBe(ErrorCode.ErrSlotNotFound);
    expect(core.story("t1").map((s) => s.outcome)).toContain(
      "rejected: slot inc1.1 is no longer allocated: its TTL expired without SubmitTask, or it was released",
    );
    expect(ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, second, T0 + 5_002)).slotId).toBe(second);
  });

  test("many retries of one reservation do not let superseded timer entries pile up", () => {
    const core = new WorkerCore({ ...defaultWorkerCoreConfig(ADDR), taskSlots: 3, maxSlotTtlMs: MAX_SLOT_TTL_MS }, INC);
    for (let i = 0; i < 20_000; i++) core.requestTaskSlot("t1", 5_000, T0 + i);
    core.validateState();
    expect((core as unknown as { heap: { size: number } }).heap.size).toBeLessThanOrEqual(2 * 1 + 1024 + 1);
    expect(core.nextDeadlineMs()).toBe(T0 + 19_999 + 5_000);
  });
});

describe("SubmitTask", () => {
  test("a client submitting into its reserved slot gets a RUNNING snapshot in phase BUILD and the task starts once", () => {
    const core = checkedCore();
    const slot = ok(core.requestTaskSlot("t1", 5_000, T0)).slotId;
    const d = core.submitTask({ taskId: "t1", timeoutMs: 60_000 }, slot, T0 + 1_000);
    const snap = ok(d);
    expect(snap).toEqual({
      taskId: "t1",
      slotId: slot,
      workerAddr: ADDR,
      state: TaskState.RUNNING,
      phase: TaskPhase.BUILD,
      callsTotal: 0,
      callsSucceeded: 0,
      callsFailed: 0,
      error: undefined,
      allocatedAtMs: T0,
      acceptedAtMs: T0 + 1_000,
      finishedAtMs: 0,
      updatedAtMs: T0 + 1_000,
      callsRetried: 0,
      deadlineMs: T0 + 61_000,
      outputs: undefined,
      runGeneration: 0,
    });
    expect(d.instructions).toEqual([
      { type: "publishSnapshot", snapshot: snap },
      { type: "startTask", taskId: "t1", slotId: slot, timeoutMs: 60_000, deadlineMs: T0 + 61_000 },
    ]);
    expect(counts(core)).toEqual([0, 1, 2]);
  });

  test("a client submitting without a slot id gets a slot allocated inline", () => {
    const core = checkedCore();
    const d = core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0);
    expect(ok(d)).toMatchObject({ slotId: "inc1.1", state: TaskState.RUNNING, allocatedAtMs: T0, acceptedAtMs: T0 });
    expect(brief(d.instructions)).toEqual(["publish t1 RUNNING BUILD", "start t1 inc1.1 timeout=300000 deadline=T0+300000"]);
    expect(counts(core)).toEqual([0, 1, 2]);
  });

  test("a client that reserved a slot but submits without the slot id runs in its reserved slot, not a second one", () => {
    const core = checkedCore();
    const slot = ok(core.requestTaskSlot("t1", 5_000, T0)).slotId;
    expect(ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0 + 10)).slotId).toBe(slot);
    expect(counts(core)).toEqual([0, 1, 2]);
  });

  test("a client using another task's slot gets SLOT_CONFLICT and the slot stays with its owner", () => {
    const core = checkedCore();
    const slot = ok(core.requestTaskSlot("owner", 5_000, T0)).slotId;
    const d = core.submitTask({ taskId: "intruder", timeoutMs: 0 }, slot, T0 + 10);
    expect(err(d).code).toBe(ErrorCode.ErrSlotConflict);
    expect(err(d).message).toBe(`[SLOT_CONFLICT] slot ${slot} is bound to another task, not to task "intruder"`);
    expect(d.instructions).toEqual([]);
    expect(core.snapshotOf("intruder")).toBeUndefined();
    expect(ok(core.submitTask({ taskId: "owner", timeoutMs: 0 }, slot, T0 + 20)).state).toBe(TaskState.RUNNING);
  });

  test("a client retrying SubmitTask gets the same task back and nothing starts twice, whatever slot id it sends", () => {
    const core = checkedCore();
    const slot = ok(core.requestTaskSlot("t1", 5_000, T0)).slotId;
    const first = ok(core.submitTask({ taskId: "t1", timeoutMs: 60_000 }, slot, T0 + 10));
    core.requestTaskSlot("other", 5_000, T0 + 10);
    for (const again of [slot, "", "inc1.2", "inc0.1", "garbage"]) {
      const d = core.submitTask({ taskId: "t1", timeoutMs: 1_000 }, again, T0 + 20);
      expect(ok(d)).toEqual(first);
      expect(d.instructions).toEqual([]);
    }
    core.handle({ type: "taskFailed", taskId: "t1", error: { code: "USER_ERROR", message: "boom" } }, T0 + 30);
    const retained = core.submitTask({ taskId: "t1", timeoutMs: 0 }, slot, T0 + 40);
    expect(ok(retained)).toMatchObject({ slotId: slot, state: TaskState.FAILED, error: { code: "USER_ERROR", message: "boom" } });
    expect(retained.instructions).toEqual([]);
  });

  test("a malformed task is refused with INVALID_ARGUMENT naming the field", () => {
    const core = checkedCore();
    expect(err(core.submitTask({ taskId: "", timeoutMs: 0 }, "", T0)).message).toBe("[INVALID_ARGUMENT] task.task_id is required");
    for (const t of [-1, 28_800_001, 0.5]) {
      expect(err(core.submitTask({ taskId: "t1", timeoutMs: t }, "", T0)).message).toBe(
        `[INVALID_ARGUMENT] task.task_timeout_ms: expected an integer in 0..28800000 (0 = the default 300000), got ${t}`,
      );
    }
    expect(ok(core.submitTask({ taskId: "t1", timeoutMs: 28_800_000 }, "", T0)).deadlineMs).toBe(T0 + 28_800_000);
  });
});

describe("terminal states free the slot", () => {
  test("a task that finishes frees its slot at once while its result stays retained", () => {
    const core = checkedCore();
    for (const id of ["a", "b", "c"]) ok(core.submitTask({ taskId: id, timeoutMs: 0 }, "", T0));
    expect(err(core.requestTaskSlot("d", 5_000, T0)).code).toBe(ErrorCode.ErrNoSlot);
    core.handle({ type: "taskCallCountsChanged", taskId: "a", callsTotal: 2, callsSucceeded: 2, callsFailed: 0, callsRetried: 1 }, T0 + 50);
    const done = core.handle({ type: "taskSucceeded", taskId: "a" }, T0 + 100);
    expect(brief(done.instructions)).toEqual(["publish a SUCCEEDED BUILD"]);
    expect(counts(core)).toEqual([0, 2, 1]);
    expect(core.slotCounts().retainedTasks).toBe(1);
    expect(ok(core.requestTaskSlot("d", 5_000, T0 + 100)).slotId).toBe("inc1.4");
    expect(ok(core.queryTask("a", T0 + 200))).toMatchObject({
      state: TaskState.SUCCEEDED,
      slotId: "inc1.1",
      finishedAtMs: T0 + 100,
      callsTotal: 2,
      callsRetried: 1,
      error: undefined,
    });
  });
});

describe("task timeout", () => {
  test("a task reserved early but submitted late times out counted from acceptance, not from allocation", () => {
    const core = checkedCore();
    const slot = ok(core.requestTaskSlot("t1", 5_000, T0)).slotId;
    ok(core.submitTask({ taskId: "t1", timeoutMs: 10_000 }, slot, T0 + 3_000));
    expect(core.nextDeadlineMs()).toBe(T0 + 13_000);
    expect(core.tick(T0 + 12_999).instructions).toEqual([]);
    const d = core.tick(T0 + 13_000);
    expect(brief(d.instructions)).toEqual(["publish t1 TIMED_OUT BUILD", "stop t1 TIMED_OUT"]);
    const message = "the task ran longer than its timeout of 10000 ms (counted from acceptance)";
    expect(d.instructions[1]).toEqual({ type: "stopTask", taskId: "t1", slotId: slot, reason: "TIMED_OUT", message });
    expect(core.snapshotOf("t1")).toMatchObject({
      state: TaskState.TIMED_OUT,
      finishedAtMs: T0 + 13_000,
      error: { code: "TIMED_OUT", message },
    });
    expect(counts(core)).toEqual([0, 0, 3]);
  });

  test("a late timer changes nothing: the task times out at its deadline and a success reported after it is ignored", () => {
    const core = checkedCore();
    ok(core.submitTask({ taskId: "t1", timeoutMs: 1_000 }, "", T0));
    // No tick at T0 + 1000; the pipeline reports success at T0 + 1500.
    const d = core.handle({ type: "taskSucceeded", taskId: "t1" }, T0 + 1_500);
    expect(brief(d.instructions)).toEqual(["publish t1 TIMED_OUT BUILD", "stop t1 TIMED_OUT"]);
    expect(d.note).toEqual({ reason: "TASK_ALREADY_TERMINAL", message: 'task "t1" is already TIMED_OUT' });
    expect(core.snapshotOf("t1")).toMatchObject({ state: TaskState.TIMED_OUT, finishedAtMs: T0 + 1_000, updatedAtMs: T0 + 1_000 });
  });

  test("task_timeout_ms 0 means the default of five minutes", () => {
    const core = checkedCore();
    ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0));
    expect(core.tick(T0 + 299_999).instructions).toEqual([]);
    expect(brief(core.tick(T0 + 300_000).instructions)).toEqual(["publish t1 TIMED_OUT BUILD", "stop t1 TIMED_OUT"]);
  });
});

describe("CancelTask", () => {
  test("a user cancelling a running task gets CANCELLED, the task is stopped and its slot is free at once", () => {
    const core = checkedCore();
    ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0));
    const d = core.cancelTask("t1", "user pressed Ctrl-C", T0 + 500);
    expect(ok(d)).toMatchObject({
      state: TaskState.CANCELLED,
      finishedAtMs: T0 + 500,
      error: { code: "CANCELLED", message: "cancelled by the client: user pressed Ctrl-C" },
    });
    expect(brief(d.instructions)).toEqual(["publish t1 CANCELLED BUILD", "stop t1 CANCELLED"]);
    expect(counts(core)).toEqual([0, 0, 3]);
  });

  test("a user cancelling a task before submitting it frees the slot, stops nothing, and a late SubmitTask does not start it", () => {
    const core = checkedCore();
    const slot = ok(core.requestTaskSlot("t1", 5_000, T0)).slotId;
    const d = core.cancelTask("t1", "", T0 + 100);
    expect(ok(d)).toMatchObject({ state: TaskState.CANCELLED, error: { code: "CANCELLED", message: "cancelled by the client" } });
    expect(brief(d.instructions)).toEqual(["publish t1 CANCELLED"]);
    expect(counts(core)).toEqual([0, 0, 3]);
    const late = core.submitTask({ taskId: "t1", timeoutMs: 0 }, slot, T0 + 200);
    expect(ok(late).state).toBe(TaskState.CANCELLED);
    expect(late.instructions).toEqual([]);
  });

  test("cancelling a task that already finished changes nothing and returns its final snapshot", () => {
    const core = checkedCore();
    ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0));
    core.handle({ type: "taskSucceeded", taskId: "t1" }, T0 + 100);
    const final = core.snapshotOf("t1");
    const d = core.cancelTask("t1", "too late", T0 + 200);
    expect(ok(d)).toEqual(final as TaskSnapshot);
    expect(d.instructions).toEqual([]);
  });

  test("cancelling an unknown task is NOT_FOUND with a message about the task, not a slot", () => {
    const core = checkedCore();
    const e = err(core.cancelTask("ghost", "", T0));
    expect(e.code).toBe(ErrorCode.ErrSlotNotFound);
    expect(e.message).toBe('[SLOT_NOT_FOUND] unknown task "ghost": never seen by this worker, or forgotten after its retention');
    expect(err(core.cancelTask("", "", T0)).message).toBe("[INVALID_ARGUMENT] task_id is required");
  });

  test("a very long cancel reason is cut before it is retained", () => {
    const core = checkedCore();
    ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0));
    const snap = ok(core.cancelTask("t1", "x".repeat(100_000), T0));
    expect(snap.error?.message.length).toBe("cancelled by the client: ".length + 1024 + 3);
  });
});

describe("retention", () => {
  test("a finished task is queryable for retentionMs after its terminal state, then forgotten", () => {
    const core = checkedCore({ retentionMs: 60_000 });
    ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0));
    core.handle({ type: "taskSucceeded", taskId: "t1" }, T0 + 1_000);
    expect(core.nextDeadlineMs()).toBe(T0 + 61_000);
    expect(ok(core.queryTask("t1", T0 + 60_999)).state).toBe(TaskState.SUCCEEDED);
    const d = core.queryTask("t1", T0 + 61_000);
    expect(err(d).code).toBe(ErrorCode.ErrSlotNotFound);
    expect(brief(d.instructions)).toEqual(["forget t1 RETENTION_EXPIRED"]);
    expect(core.taskCount()).toBe(0);
    expect(core.nextDeadlineMs()).toBeNull();
  });

  test("after retention a task id is new again: a SubmitTask runs it in a new slot", () => {
    const core = checkedCore({ retentionMs: 60_000 });
    ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0));
    core.cancelTask("t1", "", T0);
    const d = core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0 + 60_000);
    expect(brief(d.instructions)).toEqual([
      "forget t1 RETENTION_EXPIRED",
      "publish t1 RUNNING BUILD",
      "start t1 inc1.2 timeout=300000 deadline=T0+360000",
    ]);
  });

  test("a timer that fires long after a task's deadline times it out and forgets it in the same step", () => {
    const core = checkedCore({ retentionMs: 60_000 });
    ok(core.submitTask({ taskId: "t1", timeoutMs: 1_000 }, "", T0));
    expect(brief(core.tick(T0 + 100_000).instructions)).toEqual([
      "publish t1 TIMED_OUT BUILD",
      "stop t1 TIMED_OUT",
      "forget t1 RETENTION_EXPIRED",
    ]);
  });

  test("ten thousand retained tasks are expired by deadline, not by scanning", () => {
    const core = new WorkerCore({ ...defaultWorkerCoreConfig(ADDR), taskSlots: 10, retentionMs: 300_000 }, INC);
    for (let i = 0; i < 10_000; i++) {
      core.submitTask({ taskId: `t${i}`, timeoutMs: 0 }, "", T0 + i);
      core.handle({ type: "taskSucceeded", taskId: `t${i}` }, T0 + i);
    }
    core.validateState();
    expect(core.slotCounts().retainedTasks).toBe(10_000);
    expect(core.nextDeadlineMs()).toBe(T0 + 300_000);
    expect(brief(core.tick(T0 + 300_001).instructions)).toEqual(["forget t0 RETENTION_EXPIRED", "forget t1 RETENTION_EXPIRED"]);
    expect(core.tick(T0 + 309_999).instructions.length).toBe(9_998);
    core.validateState();
    expect(core.taskCount()).toBe(0);
  });
});

describe("draining", () => {
  test("a draining Worker takes no new slots but lets reserved slots be used and running tasks finish", () => {
    const core = checkedCore();
    const slot = ok(core.requestTaskSlot("reserved", 5_000, T0)).slotId;
    ok(core.submitTask({ taskId: "running", timeoutMs: 0 }, "", T0));
    expect(core.startDraining(T0 + 10).instructions).toEqual([]);
    expect(core.isDraining()).toBe(true);

    const refused = err(core.requestTaskSlot("new", 5_000, T0 + 20));
    expect(refused.code).toBe(ErrorCode.ErrNoSlot);
    expect(refused.message).toBe("[NO_SLOT] worker is draining: it takes no new slots");
    expect(err(core.submitTask({ taskId: "new", timeoutMs: 0 }, "", T0 + 20)).code).toBe(ErrorCode.ErrNoSlot);
    // Retries for tasks that already hold a slot are still answered.
    expect(ok(core.requestTaskSlot("reserved", 5_000, T0 + 30)).slotId).toBe(slot);
    expect(ok(core.requestTaskSlot("running", 5_000, T0 + 30)).state).toBe(TaskState.RUNNING);
    expect(ok(core.submitTask({ taskId: "reserved", timeoutMs: 0 }, slot, T0 + 40)).state).toBe(TaskState.RUNNING);

    expect(core.handle({ type: "taskSucceeded", taskId: "running" }, T0 + 50).instructions.map((i) => i.type)).toEqual([
      "publishSnapshot",
    ]);
    expect(brief(core.handle({ type: "taskSucceeded", taskId: "reserved" }, T0 + 60).instructions)).toEqual([
      "publish reserved SUCCEEDED BUILD",
      "drained",
    ]);
    // Drained is reported once; the retained results stay queryable.
    expect(core.startDraining(T0 + 70).instructions).toEqual([]);
    expect(ok(core.queryTask("reserved", T0 + 80)).state).toBe(TaskState.SUCCEEDED);
  });

  test("an idle Worker is drained as soon as draining starts", () => {
    const core = checkedCore();
    expect(brief(core.startDraining(T0).instructions)).toEqual(["drained"]);
  });

  test("a reserved slot that is never used expires and completes the drain", () => {
    const core = checkedCore();
    core.requestTaskSlot("t1", 5_000, T0);
    core.startDraining(T0 + 1);
    expect(brief(core.tick(T0 + 5_000).instructions)).toEqual(["forget t1 SLOT_EXPIRED", "drained"]);
  });
});

describe("progress reports", () => {
  test("a task moves forward through its phases and its call counts, each change published", () => {
    const core = checkedCore();
    ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0));
    const calls = (total: number, ok: number, failed: number, retried: number) =>
      core.handle(
        { type: "taskCallCountsChanged", taskId: "t1", callsTotal: total, callsSucceeded: ok, callsFailed: failed, callsRetried: retried },
        T0 + 10,
      );
    expect(brief(calls(10, 0, 0, 0).instructions)).toEqual(["publish t1 RUNNING BUILD"]);
    expect(brief(core.handle({ type: "taskPhaseEntered", taskId: "t1", phase: "EXECUTE" }, T0 + 20).instructions)).toEqual([
      "publish t1 RUNNING EXECUTE",
    ]);
    const d = calls(10, 7, 1, 3);
    expect(d.instructions[0]).toMatchObject({
      snapshot: { callsTotal: 10, callsSucceeded: 7, callsFailed: 1, callsRetried: 3, updatedAtMs: T0 + 20 },
    });
    // The same counts again change nothing; counts going backwards are out of order and ignored.
    expect(calls(10, 7, 1, 3)).toEqual({ reply: undefined, instructions: [], wakeAtMs: core.nextDeadlineMs() });
    expect(calls(10, 6, 1, 3).note).toEqual({ reason: "COUNTS_WENT_BACKWARDS", message: 'task "t1": call counts went backwards' });
    expect(core.snapshotOf("t1")?.callsSucceeded).toBe(7);
    expect(brief(core.handle({ type: "taskPhaseEntered", taskId: "t1", phase: "WRITE" }, T0 + 30).instructions)).toEqual([
      "publish t1 RUNNING WRITE",
    ]);
    const back = core.handle({ type: "taskPhaseEntered", taskId: "t1", phase: "EXECUTE" }, T0 + 40);
    expect(back.instructions).toEqual([]);
    expect(back.note).toEqual({ reason: "PHASE_NOT_FORWARD", message: 'task "t1" is in phase WRITE; EXECUTE is not a forward move' });
    expect(core.handle({ type: "taskPhaseEntered", taskId: "t1", phase: "WRITE" }, T0 + 40).note?.reason).toBe("PHASE_NOT_FORWARD");
    expect(core.snapshotOf("t1")?.phase).toBe(TaskPhase.WRITE);
  });

  test("a task whose builder produced no calls may go from BUILD straight to WRITE", () => {
    const core = checkedCore();
    ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0));
    expect(core.handle({ type: "taskPhaseEntered", taskId: "t1", phase: "WRITE" }, T0).note).toBeUndefined();
    expect(core.snapshotOf("t1")?.phase).toBe(TaskPhase.WRITE);
  });

  test("an adapter that reports impossible counts or an empty failure code has a bug, and the core says so by throwing", () => {
    const core = checkedCore();
    ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0));
    const bad = { type: "taskCallCountsChanged", taskId: "t1", callsTotal: 1, callsSucceeded: 1, callsFailed: 1, callsRetried: 0 } as const;
    expect(() => core.handle(bad, T0)).toThrow(/\[INTERNAL\] taskCallCountsChanged: counts must be integers >= 0/);
    expect(() => core.handle({ ...bad, callsFailed: -1, callsSucceeded: 0 }, T0)).toThrow(/INTERNAL/);
    expect(() => core.handle({ type: "taskFailed", taskId: "t1", error: { code: "", message: "" } }, T0)).toThrow(/INTERNAL/);
    expect(() => core.tick(Number.NaN)).toThrow(TypeError);
    expect(core.snapshotOf("t1")?.state).toBe(TaskState.RUNNING);
    // A refused report changes nothing, not even time: the timeout that was due is still reported by the next step.
    expect(() => core.handle(bad, T0 + 400_000)).toThrow(/INTERNAL/);
    expect(core.snapshotOf("t1")?.state).toBe(TaskState.RUNNING);
    expect(brief(core.tick(T0 + 400_000).instructions)).toEqual(["publish t1 TIMED_OUT BUILD", "stop t1 TIMED_OUT"]);
  });
});

describe("reports that come too late or too early", () => {
  test("the pipeline racing a cancel: its late reports are ignored with a reason the adapter can log", () => {
    const core = checkedCore();
    ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0));
    core.cancelTask("t1", "", T0 + 10);
    const final = core.snapshotOf("t1");
    const late = [
      core.handle({ type: "taskSucceeded", taskId: "t1" }, T0 + 20),
      core.handle({ type: "taskFailed", taskId: "t1", error: { code: "EXECUTOR_CRASHED", message: "x" } }, T0 + 20),
      core.handle({ type: "taskPhaseEntered", taskId: "t1", phase: "EXECUTE" }, T0 + 20),
      core.handle({ type: "taskCallCountsChanged", taskId: "t1", callsTotal: 5, callsSucceeded: 5, callsFailed: 0, callsRetried: 0 }, T0 + 20),
    ];
    for (const d of late) {
      expect(d.instructions).toEqual([]);
      expect(d.note).toEqual({ reason: "TASK_ALREADY_TERMINAL", message: 'task "t1" is already CANCELLED' });
    }
    expect(core.snapshotOf("t1")).toEqual(final as TaskSnapshot);
  });

  test("reports about a task that was forgotten, or never started, are ignored too", () => {
    const core = checkedCore();
    expect(core.handle({ type: "taskSucceeded", taskId: "ghost" }, T0).note).toEqual({
      reason: "UNKNOWN_TASK",
      message: 'unknown task "ghost": never seen by this worker, or forgotten after its retention',
    });
    core.requestTaskSlot("t1", 5_000, T0);
    expect(core.handle({ type: "taskSucceeded", taskId: "t1" }, T0).note?.reason).toBe("TASK_NOT_STARTED");
    expect(core.snapshotOf("t1")?.state).toBe(TaskState.ALLOCATED);
  });
});

describe("time", () => {
  test("nextDeadlineMs is the earliest of slot expiries, task deadlines and retention expiries", () => {
    const core = checkedCore({ retentionMs: 1_000, maxSlotTtlMs: MAX_SLOT_TTL_MS });
    expect(core.nextDeadlineMs()).toBeNull();
    ok(core.submitTask({ taskId: "run", timeoutMs: 50_000 }, "", T0));
    ok(core.requestTaskSlot("res", 20_000, T0));
    expect(core.nextDeadlineMs()).toBe(T0 + 20_000);
    ok(core.submitTask({ taskId: "done", timeoutMs: 0 }, "", T0));
    core.handle({ type: "taskSucceeded", taskId: "done" }, T0 + 100);
    expect(core.nextDeadlineMs()).toBe(T0 + 1_100);
    core.tick(T0 + 1_100);
    expect(core.nextDeadlineMs()).toBe(T0 + 20_000);
    // A reservation extended by a retry moves its expiry; the superseded one is skipped.
    core.requestTaskSlot("res", 40_000, T0 + 1_200);
    expect(core.nextDeadlineMs()).toBe(T0 + 41_200);
  });

  test("a clock that steps back is held at the latest time seen", () => {
    const core = checkedCore();
    ok(core.requestTaskSlot("t1", 5_000, T0 + 10_000));
    const d = core.requestTaskSlot("t2", 5_000, T0);
    expect(ok(d).allocatedAtMs).toBe(T0 + 10_000);
    expect(ok(d).deadlineMs).toBe(T0 + 15_000);
  });
});

describe("story", () => {
  test("a task explains itself: its bounded story lists what happened and what the core decided", () => {
    const core = checkedCore();
    const slot = ok(core.requestTaskSlot("t1", 5_000, T0)).slotId;
    core.requestTaskSlot("t1", 5_000, T0 + 1_000);
    ok(core.submitTask({ taskId: "t1", timeoutMs: 1_000 }, slot, T0 + 2_000));
    for (let i = 1; i <= 5; i++) {
      core.handle({ type: "taskCallCountsChanged", taskId: "t1", callsTotal: 5, callsSucceeded: i, callsFailed: 0, callsRetried: 0 }, T0 + 2_000 + i);
    }
    core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0 + 2_500);
    core.tick(T0 + 3_000);
    core.handle({ type: "taskSucceeded", taskId: "t1" }, T0 + 3_001);
    expect(core.story("t1")).toEqual([
      { atMs: T0, event: "taskSlotRequested", outcome: "slot inc1.1 allocated until 1700000005000" },
      { atMs: T0 + 1_000, event: "taskSlotRequested", outcome: "same slot returned, expiry extended to 1700000006000" },
      { atMs: T0 + 2_000, event: "taskSubmitted", outcome: "accepted in slot inc1.1, deadline 1700000003000" },
      { atMs: T0 + 2_005, event: "taskCallCountsChanged", outcome: "total 5, succeeded 5, failed 0, retried 0" },
      { atMs: T0 + 2_500, event: "taskSubmitted", outcome: "idempotent hit on a RUNNING task" },
      { atMs: T0 + 3_000, event: "taskTimedOut", outcome: "TIMED_OUT" },
      { atMs: T0 + 3_001, event: "taskSucceeded", outcome: "ignored (TASK_ALREADY_TERMINAL)" },
    ]);
    for (let i = 0; i < 100; i++) core.cancelTask("t1", "", T0 + 4_000);
    expect(core.story("t1").length).toBe(STORY_LIMIT);
    expect(core.story("ghost")).toEqual([]);
  });
});

describe("the doorway", () => {
  test("handle types its reply by the event: a snapshot reply for client requests, nothing for reports", () => {
    const core = checkedCore();
    // These assignments are the test: they only compile if ReplyOf narrows per event type.
    const requested: SnapshotReply = core.handle({ type: "taskSlotRequested", taskId: "t1", ttlMs: 5_000 }, T0).reply;
    const queried: SnapshotReply = core.handle({ type: "taskQueried", taskId: "t1" }, T0).reply;
    const reported: undefined = core.handle({ type: "taskSucceeded", taskId: "t1" }, T0).reply;
    const ticked: undefined = core.handle({ type: "timeAdvanced" }, T0).reply;
    expect(requested.snapshot?.slotId).toBe("inc1.1");
    expect(queried.snapshot?.state).toBe(TaskState.ALLOCATED);
    expect([reported, ticked]).toEqual([undefined, undefined]);
  });
});

describe("construction", () => {
  test("an operator with a bad config or the adapter with a bad incarnation gets an error naming the field", () => {
    const base = defaultWorkerCoreConfig(ADDR);
    expect(base).toEqual({ taskSlots: 50, retentionMs: 300_000, workerAddr: ADDR });
    expect(() => new WorkerCore({ ...base, taskSlots: 0 }, INC)).toThrow("taskSlots: expected an integer >= 1, got 0");
    expect(() => new WorkerCore({ ...base, retentionMs: 1.5 }, INC)).toThrow("retentionMs: expected an integer >= 1, got 1.5");
    expect(() => new WorkerCore({ ...base, workerAddr: "" }, INC)).toThrow('workerAddr: expected a non-empty string, got ""');
    expect(() => new WorkerCore(base, "a.b")).toThrow('incarnation: expected 1..64 characters of [A-Za-z0-9_-], got "a.b"');
    expect(() => new WorkerCore(base, "")).toThrow(/incarnation/);
    expect(new WorkerCore(base, "Zx_9-k").incarnation).toBe("Zx_9-k");
  });
});

describe("ownership: a task belongs to the identity that reserved or submitted it", () => {
  const alice: Requester = { identity: "client/alice", admin: false };
  const bob: Requester = { identity: "client/bob", admin: false };
  const root: Requester = { identity: "admin/root", admin: true };
  const submit = (core: WorkerCore, taskId: string, slotId: string, requester: Requester, now = T0) =>
    core.handle({ type: "taskSubmitted", task: { taskId, timeoutMs: 0 }, slotId, requester }, now);
  const reserve = (core: WorkerCore, taskId: string, requester: Requester, ttlMs = 5_000, now = T0) =>
    core.handle({ type: "taskSlotRequested", taskId, ttlMs, requester }, now);

  test("bob submitting without a slot id into the slot alice reserved for her task id is refused; alice's own submit then runs in it", () => {
    const core = checkedCore();
    const slot = ok(reserve(core, "t1", alice)).slotId;
    const stolen = submit(core, "t1", "", bob);
    expect(err(stolen).code).toBe(ErrorCode.ErrPermissionDenied);
    expect(stolen.instructions).toEqual([]);
    const mine = submit(core, "t1", slot, alice, T0 + 1);
    expect(ok(mine).slotId).toBe(slot);
    expect(mine.instructions.filter((i) => i.type === "startTask")).toHaveLength(1);
  });

  test("bob naming alice's slot id is refused too, and bob's RequestTaskSlot for her task id neither extends nor shares it", () => {
    const core = checkedCore();
    const slot = ok(reserve(core, "t1", alice)).slotId;
    expect(err(submit(core, "t1", slot, bob)).code).toBe(ErrorCode.ErrPermissionDenied);
    expect(err(reserve(core, "t1", bob, 5_000, T0 + 1_000)).code).toBe(ErrorCode.ErrPermissionDenied);
    expect(core.nextDeadlineMs()).toBe(T0 + 5_000);
  });

  test("reading, watching or cancelling another client's task is refused; an admin may read and cancel it", () => {
    const core = checkedCore();
    ok(submit(core, "t1", "", alice));
    expect(err(submit(core, "t1", "", bob)).code).toBe(ErrorCode.ErrPermissionDenied); // no idempotent peek either
    expect(err(core.handle({ type: "taskQueried", taskId: "t1", requester: bob }, T0)).code).toBe(ErrorCode.ErrPermissionDenied);
    expect(err(core.handle({ type: "taskCancelRequested", taskId: "t1", reason: "", requester: bob }, T0)).code).toBe(ErrorCode.ErrPermissionDenied);
    expect(ok(core.handle({ type: "taskQueried", taskId: "t1", requester: alice }, T0)).state).toBe(TaskState.RUNNING);
    expect(ok(core.handle({ type: "taskQueried", taskId: "t1", requester: root }, T0)).state).toBe(TaskState.RUNNING);
    expect(ok(core.handle({ type: "taskCancelRequested", taskId: "t1", reason: "", requester: root }, T0 + 1)).state).toBe(TaskState.CANCELLED);
    expect(core.ownerOf("t1")).toBe("client/alice");
  });

  test("an admin may not take over a client's reservation: reading is not owning", () => {
    const core = checkedCore();
    ok(reserve(core, "t1", alice));
    expect(err(submit(core, "t1", "", root)).code).toBe(ErrorCode.ErrPermissionDenied);
  });

  test("events without a requester are anonymous (BLOCKX_INSECURE): they share every anonymous task and no one else's", () => {
    const core = checkedCore();
    ok(core.requestTaskSlot("t1", 5_000, T0));
    expect(ok(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "", T0)).state).toBe(TaskState.RUNNING);
    expect(err(core.handle({ type: "taskQueried", taskId: "t1", requester: alice }, T0)).code).toBe(ErrorCode.ErrPermissionDenied);
  });
});

describe("the slot TTL cap (WORKER_MAX_SLOT_TTL_MS)", () => {
  test("a client asking for an hour gets the cap, counted from allocation", () => {
    const core = checkedCore();
    expect(ok(core.requestTaskSlot("t1", 3_600_000, T0)).deadlineMs).toBe(T0 + DEFAULT_MAX_SLOT_TTL_MS);
  });

  test("repeating the request never extends the slot beyond the cap from its allocation", () => {
    const core = checkedCore({ maxSlotTtlMs: 6_000 });
    ok(core.requestTaskSlot("t1", 5_000, T0));
    for (let i = 1; i <= 50; i++) expect(ok(core.requestTaskSlot("t1", 5_000, T0 + i * 100)).slotId).toBe("inc1.1");
    expect(core.nextDeadlineMs()).toBe(T0 + 6_000);
    core.tick(T0 + 6_000);
    expect(err(core.submitTask({ taskId: "t1", timeoutMs: 0 }, "inc1.1", T0 + 6_000)).code).toBe(ErrorCode.ErrSlotNotFound);
  });

  test("a short repeat within the cap still extends as before", () => {
    const core = checkedCore({ maxSlotTtlMs: 10_000 });
    ok(core.requestTaskSlot("t1", 5_000, T0));
    expect(ok(core.requestTaskSlot("t1", 5_000, T0 + 2_000)).deadlineMs).toBe(T0 + 7_000);
  });
});

describe("retained bounds (WORKER_RETAINED_TASKS_MAX, WORKER_RETAINED_BYTES_MAX)", () => {
  /** run ends one task at `at`: submitted, succeeded; returns the instructions of its end. */
  function run(core: WorkerCore, id: string, at: number): string[] {
    ok(core.submitTask({ taskId: id, timeoutMs: 0 }, "", at));
    return brief(core.handle({ type: "taskSucceeded", taskId: id }, at).instructions);
  }

  test("a client that ends more tasks than the Worker keeps: the oldest ended is forgotten first, before its retention, and said so", () => {
    const core = checkedCore({ retainedTasksMax: 2 });
    run(core, "a", T0);
    run(core, "b", T0 + 1);
    expect(run(core, "c", T0 + 2)).toEqual(["publish c SUCCEEDED BUILD", "forget a RETENTION_EVICTED"]);
    expect(core.snapshots().map((s) => s.taskId).sort()).toEqual(["b", "c"]);
    expect(err(core.handle({ type: "taskQueried", taskId: "a" }, T0 + 3)).code).toBe(ErrorCode.ErrSlotNotFound);
    // Its own retention expiry later finds nothing to do; b's and c's come as usual.
    expect(brief(core.handle({ type: "timeAdvanced" }, T0 + 300_002).instructions)).toEqual(["forget b RETENTION_EXPIRED", "forget c RETENTION_EXPIRED"]);
  });

  test("tasks whose results and logs together pass the bytes bound: the oldest go until the rest fit; the one that just ended stays even alone over it", () => {
    const core = checkedCore({ retainedBytesMax: 100 });
    run(core, "a", T0);
    expect(brief(core.handle({ type: "taskRetainedSizeKnown", taskId: "a", bytes: 60 }, T0).instructions)).toEqual([]);
    run(core, "b", T0 + 1);
    expect(brief(core.handle({ type: "taskRetainedSizeKnown", taskId: "b", bytes: 30 }, T0 + 1).instructions)).toEqual([]);
    run(core, "c", T0 + 2);
    expect(brief(core.handle({ type: "taskRetainedSizeKnown", taskId: "c", bytes: 50 }, T0 + 2).instructions)).toEqual(["forget a RETENTION_EVICTED"]);
    expect(brief(core.handle({ type: "taskRetainedSizeKnown", taskId: "c", bytes: 500 }, T0 + 2).instructions)).toEqual(["forget b RETENTION_EVICTED"]);
    expect(core.snapshots().map((s) => s.taskId)).toEqual(["c"]);
    // A size for a task not kept (unknown, or running) changes nothing.
    expect(brief(core.handle({ type: "taskRetainedSizeKnown", taskId: "zz", bytes: 1 }, T0 + 3).instructions)).toEqual([]);
    expect(core.story("a").length).toBe(0);
  });
});
