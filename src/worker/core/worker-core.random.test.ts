import { describe, expect, test } from "bun:test";
import { type ErrorCode, ErrorCode as Codes } from "../../common/error-code";
import { type TaskSnapshot, TaskPhase, TaskState } from "../../gen/worker/v1/worker";
import { mulberry32 } from "../../../test/support/mulberry32";
import { DEFAULT_TASK_TIMEOUT_MS, MAX_SLOT_TTL_MS, MAX_TASK_TIMEOUT_MS } from "./config";
import type { TaskPhaseName, TaskStateName } from "./task-transitions";
import { WorkerCore } from "./worker-core";
import type { WorkerEvent } from "./worker-core-events";
import type { SnapshotReply, WorkerDecision } from "./worker-core-instructions";

// Randomized test: thousands of interleaved client requests, pipeline reports, ticks, time jumps,
// draining and restarts over a few hundred task ids, on a small pool so that NO_SLOT, expiries and
// conflicts are common. After every step it checks the core's own invariants, the properties the
// Worker promises its clients, and a differential comparison against ReferenceWorker: the same
// rules written the obvious way (full scans, no heap, no counters).

const T0 = 1_700_000_000_000;
const PHASES: readonly TaskPhaseName[] = ["BUILD", "EXECUTE", "WRITE"];
const TERMINAL = new Set<TaskState>([TaskState.SUCCEEDED, TaskState.FAILED, TaskState.TIMED_OUT, TaskState.CANCELLED]);

type RefState = TaskStateName;

interface RefTask {
  state: RefState;
  slotId: string;
  expiresAt: number;
  deadline: number;
  finishedAt: number;
  phase: number;
  counts: [number, number, number, number];
}

type RefReply = { code: ErrorCode; draining?: boolean } | { task: RefTask };

/** ReferenceWorker is WorkerCore's contract written the naive way, for the differential check. */
class ReferenceWorker {
  readonly tasks = new Map<string, RefTask>();
  counter = 0;
  draining = false;
  now = Number.NEGATIVE_INFINITY;

  constructor(
    readonly incarnation: string,
    readonly taskSlots: number,
    readonly retentionMs: number,
  ) {}

  used(): number {
    let n = 0;
    for (const t of this.tasks.values()) if (t.state === "ALLOCATED" || t.state === "RUNNING") n++;
    return n;
  }

  /** advance applies, one at a time and earliest first, everything due by `now`. */
  advance(now: number): void {
    this.now = Math.max(this.now, now);
    for (;;) {
      let best: [string, RefTask, number] | null = null;
      for (const [id, t] of this.tasks) {
        const due = t.state === "ALLOCATED" ? t.expiresAt : t.state === "RUNNING" ? t.deadline : t.finishedAt + this.retentionMs;
        if (due <= this.now && (best === null || due < best[2])) best = [id, t, due];
      }
      if (best === null) return;
      const [id, t, due] = best;
      if (t.state === "RUNNING") {
        t.state = "TIMED_OUT";
        t.finishedAt = due;
      } else this.tasks.delete(id);
    }
  }

  request(taskId: string, ttl: number): RefReply {
    if (taskId === "" || !Number.isInteger(ttl) || ttl < 1 || ttl > MAX_SLOT_TTL_MS) return { code: Codes.ErrInvalidArgument };
    const t = this.tasks.get(taskId);
    if (t !== undefined) {
      if (t.state === "ALLOCATED") t.expiresAt = Math.max(t.expiresAt, this.now + ttl);
      return { task: t };
    }
    if (this.draining) return { code: Codes.ErrNoSlot, draining: true };
    if (this.used() >= this.taskSlots) return { code: Codes.ErrNoSlot };
    const fresh: RefTask = {
      state: "ALLOCATED",
      slotId: `${this.incarnation}.${++this.counter}`,
      expiresAt: this.now + ttl,
      deadline: 0,
      finishedAt: 0,
      phase: 0,
      counts: [0, 0, 0, 0],
    };
    this.tasks.set(taskId, fresh);
    return { task: fresh };
  }

  submit(taskId: string, timeout: number, slotId: string): RefReply {
    if (taskId === "" || !Number.isInteger(timeout) || timeout < 0 || timeout > MAX_TASK_TIMEOUT_MS) {
      return { code: Codes.ErrInvalidArgument };
    }
    let t = this.tasks.get(taskId);
    if (t !== undefined && t.state !== "ALLOCATED") return { task: t };
    if (slotId === "") {
      if (t === undefined) {
        if (this.draining) return { code: Codes.ErrNoSlot, draining: true };
        if (this.used() >= this.taskSlots) return { code: Codes.ErrNoSlot };
        t = { state: "ALLOCATED", slotId: `${this.incarnation}.${++this.counter}`, expiresAt: 0, deadline: 0, finishedAt: 0, phase: 0, counts: [0, 0, 0, 0] };
        this.tasks.set(taskId, t);
      }
    } else {
      const holder = [...this.tasks.values()].find((x) => x.slotId === slotId && (x.state === "ALLOCATED" || x.state === "RUNNING"));
      if (holder === undefined) return { code: Codes.ErrSlotNotFound };
      if (holder !== t) return { code: Codes.ErrSlotConflict };
    }
    t.state = "RUNNING";
    t.phase = 1;
    t.deadline = this.now + (timeout === 0 ? DEFAULT_TASK_TIMEOUT_MS : timeout);
    return { task: t };
  }

  cancel(taskId: string): RefReply {
    if (taskId === "") return { code: Codes.ErrInvalidArgument };
    const t = this.tasks.get(taskId);
    if (t === undefined) return { code: Codes.ErrSlotNotFound };
    if (t.state === "ALLOCATED" || t.state === "RUNNING") {
      t.state = "CANCELLED";
      t.finishedAt = this.now;
    }
    return { task: t };
  }

  query(taskId: string): RefReply {
    const t = this.tasks.get(taskId);
    return t === undefined ? { code: Codes.ErrSlotNotFound } : { task: t };
  }

  running(taskId: string): RefTask | undefined {
    const t = this.tasks.get(taskId);
    return t?.state === "RUNNING" ? t : undefined;
  }
}

/** NOT_FOUND_KINDS tells the SLOT_NOT_FOUND cases apart by their messages. */
const NOT_FOUND_KINDS: ReadonlyArray<[string, RegExp]> = [
  ["earlier incarnation", /^\[SLOT_NOT_FOUND\] slot inc\d+\.\d+ is from an earlier incarnation of this worker/],
  ["no longer allocated", /^\[SLOT_NOT_FOUND\] slot inc\d+\.\d+ is no longer allocated/],
  ["never issued", /^\[SLOT_NOT_FOUND\] slot inc\d+\.\d+ was never issued/],
  ["not a slot id", /^\[SLOT_NOT_FOUND\] slot ".*" is not a slot id issued by this worker$/],
  ["unknown task", /^\[SLOT_NOT_FOUND\] unknown task "task-\d+"/],
];

/** What the test remembers about one life of a task id (reset when the core forgets it). */
interface Life {
  started: boolean;
  terminal: boolean;
  slotId: string;
  finishedAtMs: number;
}

interface RunStats {
  steps: number;
  starts: number;
  codes: Map<string, number>;
  ignored: Map<string, number>;
  /** SLOT_NOT_FOUND replies by the case their message names. */
  notFound: Map<string, number>;
  forgotten: number;
  expired: number;
  timedOut: number;
  restarts: number;
}

function run(seed: number, steps: number, taskSlots: number, taskIds: number, retentionMs: number): RunStats {
  const rand = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const ids = Array.from({ length: taskIds }, (_, i) => `task-${i}`);
  const stats: RunStats = { steps, starts: 0, codes: new Map(), ignored: new Map(), notFound: new Map(), forgotten: 0, expired: 0, timedOut: 0, restarts: 0 };
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);

  let incarnationNo = 1;
  let core = new WorkerCore({ taskSlots, retentionMs, workerAddr: "w:1", maxSlotTtlMs: MAX_SLOT_TTL_MS }, `inc${incarnationNo}`);
  let ref = new ReferenceWorker(`inc${incarnationNo}`, taskSlots, retentionMs);
  /** Every slot id any incarnation ever handed out, to replay stale and foreign ones. */
  const issued: string[] = [];
  /** The slot id the client of each task was last told. */
  const told = new Map<string, string>();
  let lives = new Map<string, Life>();
  let now = T0;
  const drainAt = seed % 3 === 0 ? Math.floor(steps * 0.7) : -1;
  const restartAt = seed % 2 === 0 ? Math.floor(steps * 0.4) : -1;

  const fail: (step: number, what: string) => never = (step, what) => {
    throw new Error(`seed ${seed}, step ${step}, t=T0+${now - T0}: ${what}`);
  };

  for (let step = 0; step < steps; step++) {
    if (step === restartAt) {
      // A restart loses everything; the new incarnation must reject every old slot id.
      incarnationNo++;
      stats.restarts++;
      core = new WorkerCore({ taskSlots, retentionMs, workerAddr: "w:1", maxSlotTtlMs: MAX_SLOT_TTL_MS }, `inc${incarnationNo}`);
      ref = new ReferenceWorker(`inc${incarnationNo}`, taskSlots, retentionMs);
      lives = new Map();
    }
    // Calm spells (time moves in big steps: slots expire, tasks time out, results are forgotten)
    // alternate with busy ones (requests pile up within milliseconds: the pool fills up).
    const r = rand();
    const busy = Math.floor(step / 250) % 2 === 1;
    if (busy) now += r < 0.5 ? 0 : int(1, 30);
    else now += r < 0.3 ? 0 : r < 0.75 ? int(1, 200) : r < 0.97 ? int(200, 6_000) : int(20_000, 2 * retentionMs);
    // Most events are about a task in a fitting state (the pipeline reports on running tasks,
    // clients submit what they reserved); the rest hit any id, known or not.
    const x = rand();
    const inState = (...states: RefState[]): string[] => [...ref.tasks].filter(([, t]) => states.includes(t.state)).map(([id]) => id);
    const fitting =
      x < 0.25 ? inState("RUNNING", "SUCCEEDED", "CANCELLED")
      : x < 0.52 ? inState("ALLOCATED", "ALLOCATED", "RUNNING", "FAILED")
      : x < 0.58 ? []
      : x < 0.67 ? inState("ALLOCATED", "RUNNING", "SUCCEEDED", "TIMED_OUT")
      : inState("RUNNING");
    const known = fitting.length > 0 ? fitting : [...ref.tasks.keys()];
    const taskId = rand() < 0.01 ? "" : known.length > 0 && rand() < 0.7 ? pick(known) : pick(ids);
    const before = taskId === "" ? undefined : core.snapshotOf(taskId);

    // Build the event, and apply it to the reference.
    let event: WorkerEvent;
    let refReply: RefReply | undefined;
    if (step === drainAt) {
      event = { type: "drainingStarted" };
    } else if (x < 0.25) {
      const ttl = rand() < 0.02 ? pick([0, MAX_SLOT_TTL_MS + 1, 2.5]) : pick([1_000, 5_000, 5_000, int(1, 20_000)]);
      event = { type: "taskSlotRequested", taskId, ttlMs: ttl };
    } else if (x < 0.52) {
      const s = rand();
      const live = [...ref.tasks.values()].filter((t) => t.state === "ALLOCATED" || t.state === "RUNNING").map((t) => t.slotId);
      const slotId =
        s < 0.3 ? ""
        : s < 0.65 ? (told.get(taskId) ?? "")
        : s < 0.8 && live.length > 0 ? pick(live)
        : s < 0.9 && issued.length > 0 ? pick(issued)
        : s < 0.95 ? `inc${incarnationNo}.${int(1, 100_000)}`
        : pick(["garbage", "inc0.1", `inc${incarnationNo}.0`]);
      const timeout = rand() < 0.02 ? pick([-1, MAX_TASK_TIMEOUT_MS + 1]) : pick([0, int(500, 30_000), int(500, 30_000)]);
      event = { type: "taskSubmitted", task: { taskId, timeoutMs: timeout }, slotId };
    } else if (x < 0.58) {
      event = { type: "timeAdvanced" };
    } else if (x < 0.63) {
      event = { type: "taskCancelRequested", taskId, reason: pick(["", "user asked"]) };
    } else if (x < 0.67) {
      event = { type: "taskQueried", taskId };
    } else if (x < 0.76) {
      event = { type: "taskPhaseEntered", taskId, phase: pick(PHASES) };
    } else if (x < 0.91) {
      // Absolute counts, mostly forward from the current ones, sometimes backwards.
      const c = before ?? { callsTotal: 0, callsSucceeded: 0, callsFailed: 0, callsRetried: 0 };
      const back = rand() < 0.1;
      const total = back ? Math.max(0, c.callsTotal - 1) : c.callsTotal + int(0, 5);
      const succeeded = Math.min(total, (back ? c.callsSucceeded : c.callsSucceeded + int(0, 3)));
      const failed = Math.min(total - succeeded, c.callsFailed + (back ? 0 : int(0, 1)));
      event = { type: "taskCallCountsChanged", taskId, callsTotal: total, callsSucceeded: succeeded, callsFailed: failed, callsRetried: c.callsRetried + int(0, 2) };
    } else if (x < 0.96) {
      event = { type: "taskSucceeded", taskId };
    } else {
      event = { type: "taskFailed", taskId, error: { code: pick(["USER_ERROR", "EXECUTOR_CRASHED"]), message: "boom" } };
    }

    // The core's step, then the reference's (advance first, exactly like the core).
    const d = core.handle(event, now) as WorkerDecision;
    ref.advance(now);
    switch (event.type) {
      case "taskSlotRequested":
        refReply = ref.request(event.taskId, event.ttlMs);
        break;
      case "taskSubmitted":
        refReply = ref.submit(event.task.taskId, event.task.timeoutMs, event.slotId);
        break;
      case "taskCancelRequested":
        refReply = ref.cancel(event.taskId);
        break;
      case "taskQueried":
        refReply = event.taskId === "" ? { code: Codes.ErrInvalidArgument } : ref.query(event.taskId);
        break;
      case "taskPhaseEntered": {
        const t = ref.running(event.taskId);
        const p = PHASES.indexOf(event.phase) + 1;
        if (t !== undefined && p > t.phase) t.phase = p;
        break;
      }
      case "taskCallCountsChanged": {
        const t = ref.running(event.taskId);
        const next = [event.callsTotal, event.callsSucceeded, event.callsFailed, event.callsRetried] as [number, number, number, number];
        if (t !== undefined && next.every((v, i) => v >= (t.counts[i] as number))) t.counts = next;
        break;
      }
      case "taskSucceeded":
      case "taskFailed": {
        const t = ref.running(event.taskId);
        if (t !== undefined) {
          t.state = event.type === "taskSucceeded" ? "SUCCEEDED" : "FAILED";
          t.finishedAt = now;
        }
        break;
      }
      case "drainingStarted":
        ref.draining = true;
        break;
      case "timeAdvanced":
        break;
    }

    // 1. The core's own invariants.
    try {
      core.validateState();
    } catch (e) {
      fail(step, (e as Error).message);
    }

    // 2. Never more than taskSlots slots in use.
    const sc = core.slotCounts();
    if (sc.reservedSlots + sc.runningTasks > taskSlots || sc.freeSlots < 0) fail(step, `slot counts ${JSON.stringify(sc)}`);

    // 3. Instructions: startTask once per life, only for the submitted task; no resurrection.
    for (const ins of d.instructions) {
      switch (ins.type) {
        case "startTask": {
          stats.starts++;
          if (event.type !== "taskSubmitted" || ins.taskId !== event.task.taskId) fail(step, `startTask ${ins.taskId} outside its own SubmitTask`);
          const life = lives.get(ins.taskId);
          if (life?.started) fail(step, `second startTask for ${ins.taskId} in one life`);
          if (d.reply?.snapshot?.slotId !== ins.slotId) fail(step, "startTask slot differs from the reply's");
          lives.set(ins.taskId, { started: true, terminal: false, slotId: ins.slotId, finishedAtMs: 0 });
          break;
        }
        case "publishSnapshot": {
          const s = ins.snapshot;
          const life = lives.get(s.taskId);
          if (life?.terminal) fail(step, `${s.taskId} published as ${TaskState[s.state]} after it was terminal`);
          if (life !== undefined && life.slotId !== s.slotId) fail(step, `${s.taskId} changed slot within one life`);
          if (TERMINAL.has(s.state)) {
            if (s.state === TaskState.TIMED_OUT) stats.timedOut++;
            lives.set(s.taskId, { started: life?.started ?? false, terminal: true, slotId: s.slotId, finishedAtMs: s.finishedAtMs });
          } else if (life === undefined) {
            lives.set(s.taskId, { started: false, terminal: false, slotId: s.slotId, finishedAtMs: 0 });
          }
          break;
        }
        case "forgetTask": {
          const life = lives.get(ins.taskId);
          if (ins.reason === "RETENTION_EXPIRED") {
            stats.forgotten++;
            if (!life?.terminal) fail(step, `${ins.taskId} forgotten for retention but not terminal`);
            if (now < life.finishedAtMs + retentionMs) fail(step, `${ins.taskId} forgotten ${life.finishedAtMs + retentionMs - now} ms early`);
          } else {
            stats.expired++;
            if (life?.started || life?.terminal) fail(step, `${ins.taskId} forgotten as an expired slot after it was accepted`);
          }
          lives.delete(ins.taskId);
          break;
        }
        case "stopTask": {
          const life = lives.get(ins.taskId);
          if (!life?.started || !life.terminal) fail(step, `stopTask for ${ins.taskId}, which was not started or is not terminal`);
          break;
        }
        case "reportDrained":
          if (!core.isDraining() || sc.reservedSlots + sc.runningTasks > 0) fail(step, "reportDrained while slots are in use");
          break;
      }
    }

    // 4. Idempotency: a request or a submit for a task that was RUNNING or retained before the
    //    step (and still is) starts nothing and answers with the slot id the task holds or held.
    if ((event.type === "taskSubmitted" || event.type === "taskSlotRequested") && before !== undefined && before.state !== TaskState.ALLOCATED) {
      const still = core.snapshotOf(taskId);
      if (still !== undefined && still.slotId === before.slotId && d.reply?.err === undefined) {
        if (d.instructions.some((i) => i.type === "startTask")) fail(step, `idempotent ${event.type} started ${taskId} again`);
        if (d.reply?.snapshot?.slotId !== before.slotId || d.reply.snapshot.slotId === "") fail(step, `idempotent ${event.type} changed the slot id`);
      }
    }

    // 5. Differential: the reply and every task's state match the reference.
    if (refReply !== undefined) {
      const reply = d.reply as SnapshotReply;
      if ("code" in refReply) {
        if (reply.err?.code !== refReply.code) fail(step, `${event.type}(${taskId}): core ${reply.err?.code ?? "snapshot"}, reference ${refReply.code}`);
        bump(stats.codes, refReply.code);
        const drainingRefusal = /draining/.test(reply.err?.message ?? "");
        if (drainingRefusal !== (refReply.draining === true)) fail(step, `${event.type}(${taskId}): core said ${reply.err?.message}, reference draining=${refReply.draining === true}`);
        if (drainingRefusal) bump(stats.codes, "NO_SLOT/draining");
        if (refReply.code === Codes.ErrSlotNotFound) {
          const kind = NOT_FOUND_KINDS.find(([, re]) => re.test(reply.err?.message ?? ""));
          if (kind === undefined) fail(step, `SLOT_NOT_FOUND with an unexpected message: ${reply.err?.message}`);
          bump(stats.notFound, kind[0]);
        }
      } else {
        if (reply.err !== undefined) fail(step, `${event.type}(${taskId}): core ${reply.err.message}, reference a snapshot`);
        sameTask(reply.snapshot, refReply.task, (m) => fail(step, `${event.type}(${taskId}) reply: ${m}`));
        bump(stats.codes, "OK");
      }
    } else if (d.reply !== undefined) fail(step, `${event.type} got a reply`);
    if (d.note !== undefined) bump(stats.ignored, d.note.reason);
    if (core.taskCount() !== ref.tasks.size) fail(step, `core knows ${core.taskCount()} tasks, reference ${ref.tasks.size}`);
    for (const [id, t] of ref.tasks) {
      const s = core.snapshotOf(id);
      if (s === undefined) fail(step, `${id} is ${t.state} in the reference but unknown to the core`);
      else sameTask(s, t, (m) => fail(step, `${id}: ${m}`));
    }

    // 6. Nothing accepted is lost: every started task in the current incarnation is known until
    //    its retention ran out, and every terminal one is forgotten once it did.
    for (const [id, life] of lives) {
      const s = core.snapshotOf(id);
      if (life.started && s === undefined) fail(step, `accepted task ${id} was lost`);
      if (life.terminal && now >= life.finishedAtMs + retentionMs) fail(step, `${id} outlived its retention`);
    }

    // Remember what the client was told and what ids exist.
    const snap = d.reply?.snapshot;
    if (snap !== undefined && snap.slotId !== "") {
      told.set(snap.taskId, snap.slotId);
      if (!issued.includes(snap.slotId)) issued.push(snap.slotId);
    }
    const next = core.nextDeadlineMs();
    if (next !== null && next <= now) fail(step, `nextDeadlineMs ${next} is not in the future`);
    if (d.wakeAtMs !== next) fail(step, `the decision's wakeAtMs ${d.wakeAtMs} is not the next deadline ${next}`);
  }
  return stats;
}

function sameTask(s: TaskSnapshot, t: RefTask, fail: (m: string) => never): void {
  const expected = {
    // The reference state by its name in the proto contract, not through the core's own mapping.
    state: TaskState[t.state],
    slotId: t.slotId,
    phase: t.phase as TaskPhase,
    counts: t.counts.join("/"),
    finishedAtMs: t.state === "ALLOCATED" || t.state === "RUNNING" ? 0 : t.finishedAt,
    deadlineMs: t.state === "ALLOCATED" ? t.expiresAt : t.deadline,
  };
  const actual = {
    state: s.state,
    slotId: s.slotId,
    phase: s.phase,
    counts: [s.callsTotal, s.callsSucceeded, s.callsFailed, s.callsRetried].join("/"),
    finishedAtMs: s.finishedAtMs,
    deadlineMs: s.deadlineMs,
  };
  if (JSON.stringify(actual) !== JSON.stringify(expected)) fail(`core ${JSON.stringify(actual)} != reference ${JSON.stringify(expected)}`);
}

describe("WorkerCore under random interleavings", () => {
  const cases: Array<[seed: number, taskSlots: number, taskIds: number, retentionMs: number]> = [
    [1, 8, 300, 30_000],
    [2, 8, 300, 30_000],
    [3, 4, 100, 10_000],
    [4, 50, 400, 300_000],
    [5, 2, 40, 5_000],
    [6, 16, 250, 60_000],
  ];
  // WORKER_CORE_RANDOM_SEEDS=n adds n more seeds (for a longer soak; not needed in CI).
  for (let i = 0; i < Number(process.env.WORKER_CORE_RANDOM_SEEDS ?? 0); i++) cases.push([100 + i, 1 + (i % 12), 30 + ((i * 37) % 400), 5_000 + ((i * 7919) % 300_000)]);
  for (const [seed, taskSlots, taskIds, retentionMs] of cases) {
    test(`seed ${seed}: ${taskSlots} slots, ${taskIds} task ids, retention ${retentionMs} ms — every step keeps every promise`, () => {
      const stats = run(seed, 4_000, taskSlots, taskIds, retentionMs);
      if (process.env.WORKER_CORE_RANDOM_STATS) {
        console.log(seed, JSON.stringify({ ...stats, codes: [...stats.codes], ignored: [...stats.ignored], notFound: [...stats.notFound] }));
      }
      // The run must actually have exercised the interesting paths.
      expect(stats.starts).toBeGreaterThan(50);
      expect(stats.codes.get("OK") ?? 0).toBeGreaterThan(200);
      expect(stats.codes.get(Codes.ErrSlotNotFound) ?? 0).toBeGreaterThan(10);
      expect(stats.codes.get(Codes.ErrInvalidArgument) ?? 0).toBeGreaterThan(0);
      expect(stats.ignored.get("TASK_ALREADY_TERMINAL") ?? 0).toBeGreaterThan(10);
      expect(stats.forgotten).toBeGreaterThan(10);
      expect(stats.expired).toBeGreaterThan(5);
      expect(stats.timedOut).toBeGreaterThan(0);
      expect(stats.codes.get(Codes.ErrSlotConflict) ?? 0).toBeGreaterThan(5);
      for (const kind of ["no longer allocated", "never issued", "not a slot id", "unknown task"]) {
        expect(stats.notFound.get(kind) ?? 0).toBeGreaterThan(0);
      }
      for (const reason of ["UNKNOWN_TASK", "TASK_NOT_STARTED", "PHASE_NOT_FORWARD", "COUNTS_WENT_BACKWARDS"]) {
        expect(stats.ignored.get(reason) ?? 0).toBeGreaterThan(0);
      }
      if (taskSlots <= 8) expect(stats.codes.get(Codes.ErrNoSlot) ?? 0).toBeGreaterThan(0);
      if (seed % 3 === 0) expect(stats.codes.get("NO_SLOT/draining") ?? 0).toBeGreaterThan(0);
      if (seed % 2 === 0) expect(stats.notFound.get("earlier incarnation") ?? 0).toBeGreaterThan(0);
    });
  }
});
