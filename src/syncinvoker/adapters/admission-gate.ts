import { AdmissionCore, type AdmissionConfig } from "../core/admission-core";
import type { AdmissionEvent } from "../core/admission-core-events";
import type { AdmissionInstruction } from "../core/admission-core-instructions";
import { CoreDriver } from "../../common/core/core-driver";
import { SyncInvokerError, SyncInvokerErrorCode } from "../core/sync-invoker-error";

interface Waiter {
  resolve(queuedMs: number): void;
  reject(e: SyncInvokerError): void;
}

/**
 * AdmissionGate carries out AdmissionCore's instructions: `admit` resolves when the request
 * may run (with the time it waited) or rejects with QUEUE_FULL, DEADLINE_EXCEEDED or
 * UNAVAILABLE (draining). A CoreDriver runs the core (one timer at its next queued deadline). Time
 * is monotonic milliseconds (`performance.now()`).
 */
export class AdmissionGate {
  private readonly core: AdmissionCore;
  private readonly waiters = new Map<string, Waiter>();
  private readonly driver: CoreDriver<AdmissionEvent, AdmissionInstruction>;
  private idleWaiters: (() => void)[] = [];

  constructor(
    config: AdmissionConfig,
    nowMs: () => number = () => performance.now(),
  ) {
    this.core = new AdmissionCore(config);
    this.driver = new CoreDriver(this.core, { name: "admission", carryOut: (i) => this.carryOut(i), nowMs, timeAdvanced: { type: "timeAdvanced" } });
  }

  /** admit waits for a free executor; `deadlineMs` is monotonic (Infinity: none). */
  admit(id: string, deadlineMs: number): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      this.waiters.set(id, { resolve, reject });
      this.apply({ type: "requestArrived", id, deadlineMs });
    });
  }

  /** finished frees the request's executor (call it once per admitted request). */
  finished(id: string): void {
    this.apply({ type: "callFinished", id });
  }

  /** abandoned drops a still-queued request whose caller went away (no-op once it runs). */
  abandoned(id: string): void {
    const w = this.waiters.get(id);
    this.apply({ type: "requestAbandoned", id });
    if (w && this.waiters.get(id) === w) {
      this.waiters.delete(id);
      w.reject(new SyncInvokerError(SyncInvokerErrorCode.Cancelled, "the caller cancelled the request while it waited"));
    }
  }

  counts(): { running: number; queued: number } {
    return this.core.counts();
  }

  /** drain refuses new requests and resolves once nothing runs or waits. */
  drain(): Promise<void> {
    this.apply({ type: "drainingStarted" });
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
      this.maybeIdle();
    });
  }

  private apply(event: AdmissionEvent): void {
    this.driver.send(event);
    this.maybeIdle();
  }

  private carryOut(i: AdmissionInstruction): void {
    const w = this.waiters.get(i.id);
    if (!w) return;
    this.waiters.delete(i.id);
    switch (i.type) {
      case "startCall":
        w.resolve(i.queuedMs);
        break;
      case "rejectQueueFull":
        w.reject(new SyncInvokerError(SyncInvokerErrorCode.QueueFull, `every executor is busy and ${i.queueMax} requests are already waiting (SYNCINVOKER_QUEUE_MAX); back off and retry`));
        break;
      case "dropExpired":
        w.reject(new SyncInvokerError(SyncInvokerErrorCode.DeadlineExceeded, `the deadline passed after ${Math.round(i.queuedMs)} ms waiting for a free executor; the call did not run`));
        break;
      case "rejectDraining":
        w.reject(new SyncInvokerError(SyncInvokerErrorCode.Unavailable, "the Sync Invoker is shutting down; retry on another instance"));
        break;
    }
  }

  private maybeIdle(): void {
    if (this.idleWaiters.length === 0) return;
    const c = this.core.counts();
    if (c.running === 0 && c.queued === 0) for (const r of this.idleWaiters.splice(0)) r();
  }
}
