import { describe, expect, test } from "bun:test";
import { planChildren } from "./dev-plan";
import { SupervisorCore, SupervisorError } from "./supervisor-core";
import type { SupervisorEvent } from "./supervisor-events";
import type { SupervisorInstruction } from "./supervisor-instructions";

const CONFIG = { readyTimeoutMs: 30_000, stopGraceMs: 10_000 };

function plan(syncInvoker = true, proxy = true) {
  return planChildren({ workers: 2, bundleWorkers: 1, syncInvoker, proxy });
}

/** step applies one event, checks the invariants and returns the instructions. */
function step(core: SupervisorCore, event: SupervisorEvent, now: number): SupervisorInstruction[] {
  const d = core.handle(event, now);
  core.validateState();
  // What is due is applied by this step: the next wake-up is in the future, and only while a deadline runs.
  if (d.wakeAtMs !== null) expect(d.wakeAtMs).toBeGreaterThan(now);
  if (core.currentState === "RUNNING" || core.currentState === "STOPPED") expect(d.wakeAtMs).toBeNull();
  return [...d.instructions];
}

const spawned = (out: SupervisorInstruction[]) => out.flatMap((i) => (i.type === "spawnChild" ? [i.child.id] : []));
const signalled = (out: SupervisorInstruction[], signal: string) => out.flatMap((i) => (i.type === "signalChild" && i.signal === signal ? [i.id] : []));
const STAGE1 = ["coordinator", "bundle-coordinator", "worker-1", "worker-2", "bundle-worker-1"];

/** startAll takes a core from IDLE to RUNNING, every child ready. */
function startAll(core: SupervisorCore, now = 0): SupervisorInstruction[] {
  step(core, { type: "started" }, now);
  step(core, { type: "childReady", id: "etcd", endpoint: "127.0.0.1:2379" }, now);
  for (const id of STAGE1) step(core, { type: "childReady", id, endpoint: `127.0.0.1:${id.length}` }, now);
  step(core, { type: "childReady", id: "syncinvoker", endpoint: "127.0.0.1:7000" }, now);
  return step(core, { type: "childReady", id: "proxy", endpoint: "/tmp/dev/proxy.sock" }, now);
}

describe("planChildren", () => {
  test("etcd alone first, Coordinators and Workers next, then the Sync Invoker, the proxy last (it routes to the Sync Invoker); roles numbered from 1", () => {
    expect(plan().map((c) => `${c.stage}:${c.id}`)).toEqual([
      "0:etcd",
      "1:coordinator",
      "1:bundle-coordinator",
      "1:worker-1",
      "1:worker-2",
      "1:bundle-worker-1",
      "2:syncinvoker",
      "3:proxy",
    ]);
  });

  test("a build without syncinvoker and proxy commands runs neither", () => {
    expect(plan(false, false).map((c) => c.role)).not.toContain("syncinvoker");
    expect(plan(false, false).some((c) => c.stage === 2)).toBe(false);
  });
});

describe("starting", () => {
  test("each stage is spawned only once every child of the stage before is ready, then the endpoints are announced", () => {
    const core = new SupervisorCore(plan(), CONFIG);
    expect(spawned(step(core, { type: "started" }, 0))).toEqual(["etcd"]);
    expect(spawned(step(core, { type: "childReady", id: "etcd", endpoint: "127.0.0.1:2379" }, 10))).toEqual(STAGE1);
    for (const id of STAGE1.slice(0, -1)) expect(step(core, { type: "childReady", id, endpoint: `h:${id}` }, 20)).toEqual([]);
    expect(spawned(step(core, { type: "childReady", id: "bundle-worker-1", endpoint: "h:bw" }, 30))).toEqual(["syncinvoker"]);
    expect(spawned(step(core, { type: "childReady", id: "syncinvoker", endpoint: "h:si" }, 40))).toEqual(["proxy"]);
    const last = step(core, { type: "childReady", id: "proxy", endpoint: "/d/proxy.sock" }, 50);
    expect(last).toEqual([
      {
        type: "announceReady",
        endpoints: [
          ["etcd", "127.0.0.1:2379"],
          ["coordinator", "h:coordinator"],
          ["bundle-coordinator", "h:bundle-coordinator"],
          ["worker-1", "h:worker-1"],
          ["worker-2", "h:worker-2"],
          ["bundle-worker-1", "h:bw"],
          ["syncinvoker", "h:si"],
          ["proxy", "/d/proxy.sock"],
        ],
      },
    ]);
    expect(core.currentState).toBe("RUNNING");
  });

  test("a repeated readiness line changes nothing", () => {
    const core = new SupervisorCore(plan(), CONFIG);
    step(core, { type: "started" }, 0);
    step(core, { type: "childReady", id: "etcd", endpoint: "a" }, 0);
    expect(step(core, { type: "childReady", id: "etcd", endpoint: "b" }, 0)).toEqual([]);
  });

  test("a stage not ready by the deadline is named, and everything spawned so far is stopped with exit code 1", () => {
    const core = new SupervisorCore(plan(), CONFIG);
    step(core, { type: "started" }, 0);
    step(core, { type: "childReady", id: "etcd", endpoint: "a" }, 1_000);
    for (const id of STAGE1.filter((x) => x !== "worker-2")) step(core, { type: "childReady", id, endpoint: "x" }, 2_000);
    expect(step(core, { type: "timeAdvanced" }, 30_999)).toEqual([]);
    const out = step(core, { type: "timeAdvanced" }, 31_000);
    expect(out[0]).toEqual({ type: "report", level: "error", message: "worker-2 not ready within 30000 ms; stopping everything (see their log files)" });
    expect(signalled(out, "SIGTERM")).toEqual(STAGE1);
    for (const id of STAGE1) step(core, { type: "childExited", id, code: 0, signal: null }, 32_000);
    const end = step(core, { type: "childExited", id: "etcd", code: 0, signal: null }, 33_000);
    expect(end.at(-1)).toEqual({ type: "exit", code: 1 });
  });

  test("etcd dying before it is ready ends dev with exit code 1 without spawning anything else", () => {
    const core = new SupervisorCore(plan(), CONFIG);
    step(core, { type: "started" }, 0);
    const out = step(core, { type: "childExited", id: "etcd", code: 1, signal: null }, 100);
    expect(out).toEqual([
      { type: "report", level: "error", message: "etcd exited unexpectedly (code 1); stopping everything (its log: etcd.log)" },
      { type: "exit", code: 1 },
    ]);
    expect(core.statusOf("coordinator")).toBe("PENDING");
  });
});

describe("a child dying while dev runs", () => {
  test("is reported with its exit and log file, and stops everything in reverse stage order with exit code 1", () => {
    const core = new SupervisorCore(plan(), CONFIG);
    startAll(core);
    const out = step(core, { type: "childExited", id: "worker-2", code: null, signal: "SIGKILL" }, 5_000);
    expect(out[0]).toEqual({ type: "report", level: "error", message: "worker-2 exited unexpectedly (signal SIGKILL); stopping everything (its log: worker-2.log)" });
    expect(signalled(out, "SIGTERM")).toEqual(["proxy"]);
    expect(signalled(step(core, { type: "childExited", id: "proxy", code: 0, signal: null }, 5_100), "SIGTERM")).toEqual(["syncinvoker"]);
    const stage1 = step(core, { type: "childExited", id: "syncinvoker", code: 0, signal: null }, 5_200);
    expect(signalled(stage1, "SIGTERM")).toEqual(STAGE1.filter((x) => x !== "worker-2"));
    let last: SupervisorInstruction[] = [];
    for (const id of STAGE1.filter((x) => x !== "worker-2")) last = step(core, { type: "childExited", id, code: 0, signal: null }, 6_000);
    expect(signalled(last, "SIGTERM")).toEqual(["etcd"]);
    expect(step(core, { type: "childExited", id: "etcd", code: 0, signal: null }, 6_100).at(-1)).toEqual({ type: "exit", code: 1 });
    expect(core.currentState).toBe("STOPPED");
  });
});

describe("stopping on Ctrl-C", () => {
  test("SIGTERM stage by stage, etcd last, exit code 0", () => {
    const core = new SupervisorCore(plan(), CONFIG);
    startAll(core);
    const first = step(core, { type: "stopRequested", signal: "SIGINT" }, 1_000);
    expect(first[0]).toEqual({ type: "report", level: "info", message: "SIGINT: stopping every child" });
    expect(signalled(first, "SIGTERM")).toEqual(["proxy"]);
    expect(signalled(step(core, { type: "childExited", id: "proxy", code: 0, signal: null }, 1_100), "SIGTERM")).toEqual(["syncinvoker"]);
    expect(signalled(step(core, { type: "childExited", id: "syncinvoker", code: 0, signal: null }, 1_200), "SIGTERM")).toEqual(STAGE1);
    let out: SupervisorInstruction[] = [];
    for (const id of STAGE1) out = step(core, { type: "childExited", id, code: 0, signal: null }, 2_000);
    expect(signalled(out, "SIGTERM")).toEqual(["etcd"]);
    const end = step(core, { type: "childExited", id: "etcd", code: 0, signal: null }, 2_100);
    expect(end).toEqual([
      { type: "report", level: "info", message: "etcd stopped (code 0)" },
      { type: "exit", code: 0 },
    ]);
  });

  test("a stage still alive after the grace gets SIGKILL once, then the stop goes on", () => {
    const core = new SupervisorCore(plan(false, false), CONFIG);
    step(core, { type: "started" }, 0);
    step(core, { type: "childReady", id: "etcd", endpoint: "a" }, 0);
    for (const id of STAGE1) step(core, { type: "childReady", id, endpoint: "x" }, 0);
    step(core, { type: "stopRequested", signal: "SIGTERM" }, 1_000);
    for (const id of STAGE1.filter((x) => x !== "worker-1")) step(core, { type: "childExited", id, code: 0, signal: null }, 2_000);
    expect(step(core, { type: "timeAdvanced" }, 10_999)).toEqual([]);
    const kill = step(core, { type: "timeAdvanced" }, 11_000);
    expect(signalled(kill, "SIGKILL")).toEqual(["worker-1"]);
    expect(step(core, { type: "timeAdvanced" }, 12_000)).toEqual([]);
    const next = step(core, { type: "childExited", id: "worker-1", code: null, signal: "SIGKILL" }, 12_100);
    expect(signalled(next, "SIGTERM")).toEqual(["etcd"]);
  });

  test("a second Ctrl-C SIGKILLs every live child at once", () => {
    const core = new SupervisorCore(plan(), CONFIG);
    startAll(core);
    step(core, { type: "stopRequested", signal: "SIGINT" }, 1_000);
    const second = step(core, { type: "stopRequested", signal: "SIGINT" }, 1_500);
    expect(signalled(second, "SIGKILL")).toEqual(plan().map((c) => c.id));
  });

  test("Ctrl-C during start stops what was spawned and never spawns the rest", () => {
    const core = new SupervisorCore(plan(), CONFIG);
    step(core, { type: "started" }, 0);
    step(core, { type: "childReady", id: "etcd", endpoint: "a" }, 0);
    const out = step(core, { type: "stopRequested", signal: "SIGINT" }, 100);
    expect(signalled(out, "SIGTERM")).toEqual(STAGE1);
    // A Worker that becomes ready while stopping does not start the next stage.
    expect(spawned(step(core, { type: "childReady", id: "worker-1", endpoint: "x" }, 200))).toEqual([]);
    expect(core.statusOf("proxy")).toBe("PENDING");
  });
});

describe("misuse", () => {
  test("an unknown child id, a duplicate id or starting twice is a SupervisorError", () => {
    const core = new SupervisorCore(plan(), CONFIG);
    step(core, { type: "started" }, 0);
    expect(() => core.handle({ type: "childReady", id: "nope", endpoint: "" }, 0)).toThrow(SupervisorError);
    expect(() => core.handle({ type: "started" }, 0)).toThrow("started twice");
    expect(() => new SupervisorCore([...plan(), { id: "etcd", role: "etcd", stage: 0 }], CONFIG)).toThrow("unique");
  });
});

describe("wake-ups", () => {
  test("the decision names when to wake: the stage's readiness deadline while starting, the stop grace's end while stopping, nothing once killed", () => {
    const core = new SupervisorCore(plan(), CONFIG);
    expect(core.handle({ type: "started" }, 1_000).wakeAtMs).toBe(31_000);
    expect(core.handle({ type: "timeAdvanced" }, 20_000).wakeAtMs).toBe(31_000);
    const stop = core.handle({ type: "stopRequested", signal: "SIGINT" }, 25_000);
    expect(stop.wakeAtMs).toBe(35_000);
    expect(core.handle({ type: "timeAdvanced" }, 35_000).wakeAtMs).toBeNull(); // the stage was SIGKILLed: its exits come as events
  });
});

describe("randomized: any order of readiness, exits, stop requests and ticks", () => {
  test("ends with exactly one exit, after every spawned child has exited, with invariants holding at every step", () => {
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let run = 0; run < 300; run++) {
      const p = plan(rand() < 0.5, rand() < 0.5);
      const core = new SupervisorCore(p, CONFIG);
      const spawnedIds = new Set<string>();
      const exitedIds = new Set<string>();
      const exits: number[] = [];
      let now = 0;
      const apply = (e: SupervisorEvent) => {
        for (const i of step(core, e, now)) {
          if (i.type === "spawnChild") spawnedIds.add(i.child.id);
          if (i.type === "exit") exits.push(i.code);
        }
      };
      apply({ type: "started" });
      for (let i = 0; i < 200 && exits.length === 0; i++) {
        now += Math.floor(rand() * 5_000);
        const alive = [...spawnedIds].filter((id) => !exitedIds.has(id));
        const r = rand();
        const id = alive[Math.floor(rand() * alive.length)];
        if (r < 0.5 && id) apply({ type: "childReady", id, endpoint: "x" });
        else if (r < 0.6 && id) {
          exitedIds.add(id);
          apply({ type: "childExited", id, code: 0, signal: null });
        } else if (r < 0.65) apply({ type: "stopRequested", signal: "SIGINT" });
        else apply({ type: "timeAdvanced" });
        // The adapters carry signals out: a signalled child exits some time later.
        if (core.currentState === "STOPPING" && id && rand() < 0.5 && !exitedIds.has(id)) {
          exitedIds.add(id);
          apply({ type: "childExited", id, code: 0, signal: null });
        }
      }
      // Whatever is left exits now.
      if (core.currentState !== "STOPPED") apply({ type: "stopRequested", signal: "SIGTERM" });
      for (const id of spawnedIds) if (!exitedIds.has(id)) apply({ type: "childExited", id, code: 0, signal: null });
      expect(exits.length).toBe(1);
      expect(core.currentState).toBe("STOPPED");
    }
  });
});
