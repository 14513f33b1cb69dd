import type { Decision } from "../../common/core/decision";
import type { ChildSpec } from "./dev-plan";
import { SupervisorError } from "./supervisor-error";
import type { SupervisorEvent } from "./supervisor-events";
import type { SupervisorInstruction } from "./supervisor-instructions";
import { assertSupervisorTransition, type SupervisorState } from "./supervisor-transitions";

export { SupervisorError } from "./supervisor-error";
export type { SupervisorState } from "./supervisor-transitions";
export type ChildStatus = "PENDING" | "SPAWNED" | "READY" | "EXITED";

export interface SupervisorConfig {
  /** How long a stage may take to become ready before dev gives up and stops everything. */
  readonly readyTimeoutMs: number;
  /** How long a stage's children may take to exit after SIGTERM before they get SIGKILL. */
  readonly stopGraceMs: number;
}

interface ChildState {
  readonly spec: ChildSpec;
  status: ChildStatus;
  endpoint: string;
}

/**
 * SupervisorCore decides how `blockx dev` starts, watches and stops its children; it owns no
 * process and reads no clock. Start: stage by stage, each once the one before is ready, with a
 * readiness deadline per stage. A child that exits while dev is starting or running is
 * reported and stops everything with exit code 1: a silently restarted child would hide the
 * bug the person is chasing, and the log file of the child says why it died. Stop (Ctrl-C,
 * SIGTERM, or a failure): the stages backwards, SIGTERM to a stage's children, SIGKILL to
 * those still alive after `stopGraceMs`, the next stage once the stage has no live child; a
 * second stop request SIGKILLs every live child at once. `exit` comes exactly once, after the
 * last child has ended.
 */
export class SupervisorCore {
  private state: SupervisorState = "IDLE";
  private readonly children: ChildState[];
  private readonly lastStage: number;
  private startStage = 0;
  private readyDeadlineMs = 0;
  private stopStage = -1;
  private stopDeadlineMs = 0;
  private stopStageKilled = false;
  private exitCode = 0;

  constructor(
    plan: readonly ChildSpec[],
    private readonly config: SupervisorConfig,
  ) {
    if (plan.length === 0) throw new SupervisorError("the plan has no child");
    const ids = new Set(plan.map((c) => c.id));
    if (ids.size !== plan.length) throw new SupervisorError("child ids must be unique");
    this.children = plan.map((spec) => ({ spec, status: "PENDING", endpoint: "" }));
    this.lastStage = Math.max(...plan.map((c) => c.stage));
  }

  get currentState(): SupervisorState {
    return this.state;
  }

  statusOf(id: string): ChildStatus {
    return this.child(id).status;
  }

  /** handle applies one event at `nowMs` and returns what the adapters must do, and when to wake it (a readiness or stop-grace deadline). */
  handle(event: SupervisorEvent, nowMs: number): Decision<SupervisorInstruction> {
    const out: SupervisorInstruction[] = [];
    // What fell due by now is applied first, whichever event brings the time (the timer may be late).
    if (event.type !== "started") this.onTimeAdvanced(nowMs, out);
    switch (event.type) {
      case "started":
        if (this.state !== "IDLE") throw new SupervisorError(`started twice (state ${this.state})`);
        this.moveTo("STARTING");
        this.spawnStage(this.firstStage(), nowMs, out);
        break;
      case "childReady":
        this.onReady(event.id, event.endpoint, nowMs, out);
        break;
      case "childExited":
        this.onExited(event.id, event.code, event.signal, nowMs, out);
        break;
      case "stopRequested":
        this.onStopRequested(event.signal, nowMs, out);
        break;
      case "timeAdvanced":
        break;
    }
    return { instructions: out, wakeAtMs: this.wakeAtMs() };
  }

  /** wakeAtMs: the readiness deadline while starting, the stop grace's end while a stage is being stopped. */
  private wakeAtMs(): number | null {
    if (this.state === "STARTING") return this.readyDeadlineMs;
    if (this.state === "STOPPING" && !this.stopStageKilled) return this.stopDeadlineMs;
    return null;
  }

  private moveTo(to: SupervisorState): void {
    assertSupervisorTransition(this.state, to);
    this.state = to;
  }

  private firstStage(): number {
    return Math.min(...this.children.map((c) => c.spec.stage));
  }

  private child(id: string): ChildState {
    const c = this.children.find((x) => x.spec.id === id);
    if (!c) throw new SupervisorError(`unknown child ${JSON.stringify(id)}`);
    return c;
  }

  private live(): ChildState[] {
    return this.children.filter((c) => c.status === "SPAWNED" || c.status === "READY");
  }

  private spawnStage(stage: number, nowMs: number, out: SupervisorInstruction[]): void {
    this.startStage = stage;
    this.readyDeadlineMs = nowMs + this.config.readyTimeoutMs;
    for (const c of this.children) {
      if (c.spec.stage !== stage) continue;
      c.status = "SPAWNED";
      out.push({ type: "spawnChild", child: c.spec });
    }
  }

  private onReady(id: string, endpoint: string, nowMs: number, out: SupervisorInstruction[]): void {
    const c = this.child(id);
    if (c.status !== "SPAWNED") return; // late or repeated readiness: nothing changes
    c.status = "READY";
    c.endpoint = endpoint;
    if (this.state !== "STARTING") return;
    const stage = this.children.filter((x) => x.spec.stage === this.startStage);
    if (!stage.every((x) => x.status === "READY")) return;
    const next = this.children.map((x) => x.spec.stage).filter((s) => s > this.startStage);
    if (next.length > 0) {
      this.spawnStage(Math.min(...next), nowMs, out);
      return;
    }
    this.moveTo("RUNNING");
    out.push({ type: "announceReady", endpoints: this.children.map((x) => [x.spec.id, x.endpoint] as const) });
  }

  private onExited(id: string, code: number | null, signal: string | null, nowMs: number, out: SupervisorInstruction[]): void {
    const c = this.child(id);
    if (c.status === "EXITED" || c.status === "PENDING") return;
    c.status = "EXITED";
    const how = signal ? `signal ${signal}` : `code ${code}`;
    if (this.state === "STARTING" || this.state === "RUNNING") {
      out.push({ type: "report", level: "error", message: `${id} exited unexpectedly (${how}); stopping everything (its log: ${id}.log)` });
      this.beginStop(1, nowMs, out);
      return;
    }
    if (this.state === "STOPPING") {
      out.push({ type: "report", level: "info", message: `${id} stopped (${how})` });
      this.advanceStop(nowMs, out);
    }
  }

  private onStopRequested(signal: string, nowMs: number, out: SupervisorInstruction[]): void {
    if (this.state === "STOPPED") return;
    if (this.state === "STOPPING") {
      out.push({ type: "report", level: "warn", message: `second ${signal}: killing every child now` });
      for (const c of this.live()) out.push({ type: "signalChild", id: c.spec.id, signal: "SIGKILL" });
      return;
    }
    out.push({ type: "report", level: "info", message: `${signal}: stopping every child` });
    this.beginStop(0, nowMs, out);
  }

  private onTimeAdvanced(nowMs: number, out: SupervisorInstruction[]): void {
    if (this.state === "STARTING" && nowMs >= this.readyDeadlineMs) {
      const waiting = this.children.filter((c) => c.spec.stage === this.startStage && c.status === "SPAWNED").map((c) => c.spec.id);
      out.push({
        type: "report",
        level: "error",
        message: `${waiting.join(", ")} not ready within ${this.config.readyTimeoutMs} ms; stopping everything (see their log files)`,
      });
      this.beginStop(1, nowMs, out);
      return;
    }
    if (this.state === "STOPPING" && !this.stopStageKilled && nowMs >= this.stopDeadlineMs) {
      this.stopStageKilled = true;
      for (const c of this.live()) {
        if (c.spec.stage !== this.stopStage) continue;
        out.push({ type: "report", level: "warn", message: `${c.spec.id} still running ${this.config.stopGraceMs} ms after SIGTERM: SIGKILL` });
        out.push({ type: "signalChild", id: c.spec.id, signal: "SIGKILL" });
      }
    }
  }

  private beginStop(code: number, nowMs: number, out: SupervisorInstruction[]): void {
    this.moveTo("STOPPING");
    this.exitCode = code;
    this.advanceStop(nowMs, out);
  }

  /** advanceStop signals the highest stage that still has live children, once per stage. */
  private advanceStop(nowMs: number, out: SupervisorInstruction[]): void {
    const live = this.live();
    if (live.length === 0) {
      this.moveTo("STOPPED");
      out.push({ type: "exit", code: this.exitCode });
      return;
    }
    const stage = Math.max(...live.map((c) => c.spec.stage));
    if (stage === this.stopStage) return;
    this.stopStage = stage;
    this.stopDeadlineMs = nowMs + this.config.stopGraceMs;
    this.stopStageKilled = false;
    for (const c of live) if (c.spec.stage === stage) out.push({ type: "signalChild", id: c.spec.id, signal: "SIGTERM" });
  }

  /** validateState checks the invariants the tests run after every step. */
  validateState(): void {
    const live = this.live().length;
    if (this.state === "STOPPED" && live > 0) throw new SupervisorError("STOPPED with live children");
    if (this.state === "IDLE" && this.children.some((c) => c.status !== "PENDING")) throw new SupervisorError("IDLE with spawned children");
    if (this.state === "RUNNING" && this.children.some((c) => c.status !== "READY")) throw new SupervisorError("RUNNING with a child not ready");
    if (this.lastStage < this.startStage) throw new SupervisorError("start stage past the last stage");
  }
}
