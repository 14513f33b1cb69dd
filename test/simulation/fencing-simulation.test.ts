/**
 * The fencing rule as a seeded simulation with no IO: a table store model built on the rule's
 * own decisions (src/outputs/stores/run-fence.ts: decideClaim, fenceProblem; table-schema.ts:
 * checkReplaced), Workers with epochs and leases that renew, pause past their lease, crash and
 * come back, commits that travel for a while (a paused Worker's arrive after it thaws), and clients
 * that lose SubmitTask answers, follow the Worker they sent to, declare it lost after a while and
 * resubmit. After every step an independent ledger checks what the cluster believes:
 * - no commit of a run is taken after a newer run of its task was claimed (the client gave up on it),
 *   nor after its Worker's lease had expired when it was sent;
 * - no block's rows are replaced by a run claimed before the run that wrote them;
 * - a task id never runs twice at once: two runs of one id are never both taking commits.
 * At the end, with every fault healed and every task driven to its end: every block a task covered
 * holds the rows of exactly one run, the last-claimed one that wrote it, and that run is its task's
 * current run; every call of a normal-table task holds the rows of one run. A failing seed prints
 * its transcript.
 */
import { describe, expect, test } from "bun:test";
import { checkReplaced } from "../../src/outputs/stores/table-schema";
import { decideClaim, fenceProblem, type RunFence, type RunRow, type RunState } from "../../src/outputs/stores/run-fence";
import { TableStoreError } from "../../src/outputs/stores/table-store";
import { mulberry32 } from "../support/mulberry32";

const LEASE_TTL = 20;
const LOST_AFTER = 4;

class SimulationFailure extends Error {}

/** The table store model: runs, leases, block rows (one block per call), normal rows per call. */
class ModelStore {
  readonly runs = new Map<string, { generation: number; epoch: string; worker: string; state: RunState; seq: number }>();
  readonly leases = new Map<string, number>();
  /** block -> the run that wrote its rows. */
  readonly blocks = new Map<number, { taskId: string; generation: number; seq: number }>();
  /** `${task}/${call}` -> generation whose rows are there. */
  readonly calls = new Map<string, number>();
  private seq = 0;

  row(taskId: string, at: number): RunRow | null {
    const r = this.runs.get(taskId);
    if (!r) return null;
    const exp = this.leases.get(r.epoch);
    return { taskId, ...r, workerAddr: r.worker, leaseLive: exp !== undefined && exp > at };
  }

  openEpoch(epoch: string, now: number): void {
    this.leases.set(epoch, now + LEASE_TTL);
  }

  renew(epoch: string, issued: number, now: number): boolean {
    const exp = this.leases.get(epoch);
    if (exp === undefined || exp <= issued) return false;
    this.leases.set(epoch, now + LEASE_TTL);
    return true;
  }

  claim(taskId: string, epoch: string, worker: string, supersede: boolean, now: number) {
    const row = this.row(taskId, now);
    const exp = this.leases.get(epoch);
    const d = decideClaim({ taskId, epoch, workerAddr: worker, supersede }, row, exp !== undefined && exp > now);
    if (d.kind === "leaseLost" || d.kind === "refuse") return { kind: d.kind, current: row } as const;
    if (d.kind === "mine") return { kind: "claimed", fence: d.fence } as const;
    const generation = d.kind === "insert" ? 1 : d.generation;
    const fence: RunFence = { taskId, generation, epoch, seq: ++this.seq };
    this.runs.set(taskId, { generation, epoch, worker, state: "RUNNING", seq: fence.seq });
    return { kind: "claimed", fence } as const;
  }

  end(fence: RunFence, state: Exclude<RunState, "RUNNING">): void {
    const r = this.runs.get(fence.taskId);
    if (r && r.generation === fence.generation && r.epoch === fence.epoch && r.state === "RUNNING") r.state = state;
  }

  /** commit one call (a block, or a normal-table call) under `fence`, judged as of `issued`. */
  commit(fence: RunFence, call: { kind: "block"; block: number } | { kind: "normal"; index: number }, issued: number): string | null {
    const stale = fenceProblem(fence, this.row(fence.taskId, issued));
    if (stale) return stale;
    if (call.kind === "normal") {
      this.calls.set(`${fence.taskId}/${call.index}`, fence.generation);
      return null;
    }
    const had = this.blocks.get(call.block);
    try {
      checkReplaced("t", { fromBlock: call.block, toBlock: call.block }, had ? [{ f: call.block, t: call.block, s: had.seq }] : [], fence);
    } catch (e) {
      if (e instanceof TableStoreError) return e.message;
      throw e;
    }
    this.blocks.set(call.block, { taskId: fence.taskId, generation: fence.generation, seq: fence.seq });
    return null;
  }
}

interface SimTask {
  readonly id: string;
  readonly kind: "block" | "normal";
  readonly blocks: number[];
  /** The client's view: the Worker it follows, and whether it is waiting for an answer. */
  following: string | null;
  lastHeardAt: number;
  /** The newest run generation the client heard of (an answered claim or refusal): an older run's end is not its result. */
  newest: number;
  done: boolean;
  attempts: number;
}

interface Run {
  readonly fence: RunFence;
  readonly task: SimTask;
  /** Calls sent, and calls whose commit the store took: the run succeeds once every call's is taken (a task never succeeds before its rows are durable). */
  next: number;
  taken: number;
}

interface SimWorker {
  readonly addr: string;
  epoch: string;
  paused: boolean;
  up: boolean;
  lastRenewIssued: number;
  runs: Map<string, Run>;
}

interface InFlight {
  readonly deliverAt: number;
  readonly worker: SimWorker;
  readonly fence: RunFence;
  readonly call: { kind: "block"; block: number } | { kind: "normal"; index: number };
  readonly issued: number;
}

function simulate(seed: number, steps: number, breakRule?: "no-generation-check" | "client-takes-older-run-end"): string[] {
  const rand = mulberry32(seed);
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rand() * a.length)]!;
  const log: string[] = [];
  const store = new ModelStore();
  let now = 0;
  let epochs = 0;
  const workers: SimWorker[] = ["w1", "w2", "w3"].map((addr) => ({ addr, epoch: "", paused: false, up: true, lastRenewIssued: 0, runs: new Map() }));
  for (const w of workers) {
    w.epoch = `e${++epochs}`;
    store.openEpoch(w.epoch, now);
  }
  const tasks: SimTask[] = [];
  const inflight: InFlight[] = [];
  /** The ledger: for each task, the generation the cluster believes current (the last claim a client made), and when it became so. */
  const believed = new Map<string, number>();
  const accepted: { taskId: string; generation: number; at: number }[] = [];
  const fail = (why: string): never => {
    throw new SimulationFailure(`seed ${seed}, t=${now}: ${why}\n${(process.env.SIM_GREP ? log.filter((l) => l.includes(process.env.SIM_GREP!)) : log.slice(-40)).join("\n")}`);
  };
  const commitOk = store.commit.bind(store);
  if (breakRule === "no-generation-check") {
    // Test of the test: a store that checks only the state and lease of whatever run row it finds.
    store.commit = (fence, call, issued) => commitOk({ ...fence, generation: store.runs.get(fence.taskId)?.generation ?? fence.generation, epoch: store.runs.get(fence.taskId)?.epoch ?? fence.epoch }, call, issued);
  }

  const submit = (task: SimTask, resubmit: boolean) => {
    const w = pick(workers.filter((x) => x.up));
    task.attempts++;
    const lostRequest = rand() < 0.1;
    const lostAnswer = !lostRequest && rand() < 0.2;
    log.push(`t=${now} submit ${task.id} to ${w.addr}${resubmit ? " (resubmit)" : ""}${lostRequest ? " [request lost]" : lostAnswer ? " [answer lost]" : ""}`);
    task.following = w.addr; // the client follows where it sent (answered, uncertain, or lost)
    task.lastHeardAt = now;
    if (lostRequest || w.paused) return;
    const c = store.claim(task.id, w.epoch, w.addr, resubmit, now);
    if (c.kind === "leaseLost") return;
    if (c.kind === "refuse") {
      if (!lostAnswer) {
        task.following = c.current!.workerAddr; // attach
        task.newest = Math.max(task.newest, c.current!.generation);
      }
      return;
    }
    believed.set(task.id, Math.max(believed.get(task.id) ?? 0, c.fence!.generation));
    if (!lostAnswer) task.newest = Math.max(task.newest, c.fence!.generation);
    if (!w.runs.has(task.id)) w.runs.set(task.id, { fence: c.fence!, task, next: 0, taken: 0 });
  };

  for (let step = 0; step < steps; step++) {
    now++;
    const r = rand();
    if (r < 0.08 && tasks.length < 30) {
      const start = Math.floor(rand() * 40);
      const t: SimTask = { id: `t${tasks.length}`, kind: rand() < 0.5 ? "block" : "normal", blocks: Array.from({ length: 1 + Math.floor(rand() * 8) }, (_, i) => start + i), following: null, lastHeardAt: now, newest: 0, done: false, attempts: 0 };
      tasks.push(t);
      submit(t, false);
    } else if (r < 0.2) {
      // Pauses of every length: shorter and longer than the clients' patience and than the lease.
      const w = pick(workers);
      w.paused = !w.paused;
      log.push(`t=${now} ${w.addr} ${w.paused ? "paused" : "thawed"}`);
    } else if (r < 0.22) {
      const w = pick(workers);
      if (w.up && workers.filter((x) => x.up).length > 1) {
        log.push(`t=${now} ${w.addr} crashed`);
        w.up = false;
        w.runs.clear();
      } else if (!w.up) {
        w.up = true;
        w.paused = false;
        w.epoch = `e${++epochs}`;
        store.openEpoch(w.epoch, now);
        log.push(`t=${now} ${w.addr} restarted as ${w.epoch}`);
      }
    }
    // Workers that run: renew, and send a commit of each run (it travels 0..3 steps).
    for (const w of workers) {
      if (!w.up || w.paused) continue;
      if (now - w.lastRenewIssued >= 3) {
        w.lastRenewIssued = now;
        if (!store.renew(w.epoch, now, now)) {
          log.push(`t=${now} ${w.addr} lost its lease (epoch ${w.epoch}): its runs end`);
          for (const run of w.runs.values()) store.end(run.fence, "FAILED");
          w.runs.clear();
          w.epoch = `e${++epochs}`;
          store.openEpoch(w.epoch, now);
        }
      }
      for (const run of [...w.runs.values()]) {
        const n = run.task.blocks.length;
        if (run.taken >= n) {
          store.end(run.fence, "SUCCEEDED");
          w.runs.delete(run.task.id);
          // The client hears the end from the Worker it follows, unless it knows of a newer run (superseded).
          if (run.task.following === w.addr && (run.fence.generation >= run.task.newest || breakRule === "client-takes-older-run-end")) run.task.done = true;
          continue;
        }
        if (run.next >= n) continue; // every call sent: waiting for their commits
        const call = run.task.kind === "block" ? { kind: "block" as const, block: run.task.blocks[run.next]! } : { kind: "normal" as const, index: run.next };
        run.next++;
        inflight.push({ deliverAt: now + Math.floor(rand() * 7), worker: w, fence: run.fence, call, issued: now });
      }
    }
    // Commits arrive (a paused Worker's process sends nothing, but what it sent before still travels).
    for (let i = inflight.length - 1; i >= 0; i--) {
      const m = inflight[i]!;
      if (m.deliverAt > now) continue;
      inflight.splice(i, 1);
      const before = m.call.kind === "block" ? store.blocks.get(m.call.block) : undefined;
      const refused = store.commit(m.fence, m.call, m.issued);
      if (refused) {
        log.push(`t=${now} commit of ${m.fence.taskId} run ${m.fence.generation} refused: ${refused.slice(0, 60)}`);
        const run = m.worker.runs.get(m.fence.taskId);
        if (run && run.fence.generation === m.fence.generation) {
          store.end(m.fence, "FAILED");
          m.worker.runs.delete(m.fence.taskId);
        }
        continue;
      }
      // The ledger's checks, independent of the store's rule.
      const current = believed.get(m.fence.taskId) ?? 0;
      if (m.fence.generation < current) fail(`a commit of ${m.fence.taskId} run ${m.fence.generation} was taken after run ${current} was claimed`);
      if (before && before.seq > m.fence.seq) fail(`block ${(m.call as { block: number }).block} of a run claimed later (seq ${before.seq}) was replaced by run seq ${m.fence.seq}`);
      accepted.push({ taskId: m.fence.taskId, generation: m.fence.generation, at: now });
      log.push(`t=${now} commit of ${m.fence.taskId} run ${m.fence.generation} taken`);
      const taker = m.worker.runs.get(m.fence.taskId);
      if (taker && taker.fence.generation === m.fence.generation && taker.fence.epoch === m.fence.epoch) taker.taken++;
    }
    // At most one run of a task id takes commits at a time (within one step).
    const takers = new Map<string, Set<number>>();
    for (const a of accepted.filter((x) => x.at === now)) takers.set(a.taskId, (takers.get(a.taskId) ?? new Set()).add(a.generation));
    for (const [taskId, gens] of takers) if (gens.size > 1) fail(`task ${taskId}: runs ${[...gens].join(", ")} both took commits at once`);
    // Clients: a task whose Worker is silent past LOST_AFTER is resubmitted (a new run, fencing the old one off).
    for (const t of tasks) {
      if (t.done) continue;
      const w = workers.find((x) => x.addr === t.following);
      const hearing = w && w.up && !w.paused && (w.runs.has(t.id) || store.runs.get(t.id)?.worker === w.addr);
      if (hearing) t.lastHeardAt = now;
      else if (now - t.lastHeardAt >= LOST_AFTER) submit(t, store.runs.has(t.id));
      if (store.runs.get(t.id)?.state === "SUCCEEDED" && store.runs.get(t.id)!.worker === t.following) t.done = true;
    }
  }
  // Heal everything and drive every task to its end.
  for (const w of workers) {
    w.paused = false;
    if (!w.up) {
      w.up = true;
      w.epoch = `e${++epochs}`;
      store.openEpoch(w.epoch, now);
    }
  }
  for (let extra = 0; extra < 2_000 && (tasks.some((t) => !t.done) || inflight.length > 0); extra++) {
    now++;
    for (const w of workers) {
      if (now - w.lastRenewIssued >= 3) {
        w.lastRenewIssued = now;
        if (!store.renew(w.epoch, now, now)) {
          w.runs.clear();
          w.epoch = `e${++epochs}`;
          store.openEpoch(w.epoch, now);
        }
      }
      for (const run of [...w.runs.values()]) {
        if (run.taken >= run.task.blocks.length) {
          store.end(run.fence, "SUCCEEDED");
          w.runs.delete(run.task.id);
          continue;
        }
        if (run.next >= run.task.blocks.length) continue;
        const call = run.task.kind === "block" ? { kind: "block" as const, block: run.task.blocks[run.next]! } : { kind: "normal" as const, index: run.next };
        run.next++;
        inflight.push({ deliverAt: now, worker: w, fence: run.fence, call, issued: now });
      }
    }
    for (const m of inflight.splice(0)) {
      const before = m.call.kind === "block" ? store.blocks.get(m.call.block) : undefined;
      const refused = store.commit(m.fence, m.call, m.issued);
      if (refused) {
        const run = m.worker.runs.get(m.fence.taskId);
        if (run && run.fence.generation === m.fence.generation) {
          store.end(m.fence, "FAILED");
          m.worker.runs.delete(m.fence.taskId);
        }
        continue;
      }
      if (m.fence.generation < (believed.get(m.fence.taskId) ?? 0)) fail(`a commit of ${m.fence.taskId} run ${m.fence.generation} was taken after a newer run was claimed`);
      if (before && before.seq > m.fence.seq) fail(`a block of a later-claimed run was replaced`);
      const taker = m.worker.runs.get(m.fence.taskId);
      if (taker && taker.fence.generation === m.fence.generation && taker.fence.epoch === m.fence.epoch) taker.taken++;
    }
    for (const t of tasks) {
      if (t.done) continue;
      const run = store.runs.get(t.id);
      if (run?.state === "SUCCEEDED") t.done = true;
      else if (!run || run.state !== "RUNNING" || !workers.some((w) => w.runs.has(t.id))) submit(t, Boolean(run));
    }
  }
  if (tasks.some((t) => !t.done)) fail(`tasks never finished: ${tasks.filter((t) => !t.done).map((t) => t.id).join(", ")}`);
  // The end state: every block holds the rows of the last-claimed run that wrote it, and that run is
  // its task's current one; every call of a normal-table task holds its task's current run's rows.
  for (const [block, by] of store.blocks) {
    const run = store.runs.get(by.taskId)!;
    if (by.generation !== run.generation) fail(`block ${block} holds rows of ${by.taskId} run ${by.generation}, not its current run ${run.generation}`);
    const later = tasks.filter((t) => t.kind === "block" && t.blocks.includes(block)).map((t) => store.runs.get(t.id)!).filter((r) => r.seq > by.seq && r.state === "SUCCEEDED");
    if (later.length > 0) fail(`block ${block} holds rows of seq ${by.seq}, but a task claimed later (seq ${later[0]!.seq}) succeeded over it`);
  }
  for (const t of tasks.filter((x) => x.kind === "normal")) {
    const run = store.runs.get(t.id)!;
    for (let i = 0; i < t.blocks.length; i++) {
      const g = store.calls.get(`${t.id}/${i}`);
      if (g !== run.generation) fail(`call ${i} of ${t.id} holds run ${g}'s rows, not the succeeded run ${run.generation}'s`);
    }
  }
  return log;
}

describe("fencing simulation (seeded): runs, leases, lost answers, pauses, crashes, resubmissions", () => {
  test("200 seeds of 400 steps: the ledger's checks hold after every step, and every block and call ends with its current run's rows", () => {
    let resubmitted = 0;
    let refused = 0;
    for (let seed = 1; seed <= 200; seed++) {
      const log = simulate(seed, 400);
      resubmitted += log.filter((l) => l.includes("(resubmit)")).length;
      refused += log.filter((l) => l.includes("refused")).length;
    }
    // The faults did happen: runs were superseded and their late commits refused.
    expect(resubmitted).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(100);
  });

  const caughtWith = (breakRule: Parameters<typeof simulate>[2]) =>
    Array.from({ length: 50 }, (_, i) => i + 1).some((seed) => {
      try {
        simulate(seed, 400, breakRule);
        return false;
      } catch (e) {
        if (!(e instanceof SimulationFailure)) throw e;
        return true;
      }
    });

  test("test of the test: a store that does not check the commit's generation is caught", () => {
    expect(caughtWith("no-generation-check")).toBe(true);
  });

  test("test of the test: a client that takes the end of a run older than one it asked for (a Worker that finished unheard, then answered the client's second resubmission) is caught: blocks end with two runs' rows", () => {
    expect(caughtWith("client-takes-older-run-end")).toBe(true);
  });
});
