import { readFileSync } from "node:fs";
import { z } from "zod";
import type { Logger } from "../../common/logging/logger";
import { type Backend, type BackendOp } from "./backends/backend-registry";
import { BackendError } from "../backend-error";

/** Faults injected into every request of a backend (tests and drills; both 0 in production). */
export interface Faults {
  /** Added before each request is served. */
  readonly latencyMs: number;
  /** Share of requests failing with a retryable BackendUnavailable, 0..1. */
  readonly errorRate: number;
}

const FaultsFile = z.strictObject({
  latencyMs: z.number().min(0).max(600_000).optional(),
  errorRate: z.number().min(0).max(1).optional(),
});

/** How often the faults file is re-read. */
export const FAULTS_FILE_POLL_MS = 200;

/**
 * FaultInjector slows a backend down and makes it fail, so that a test can degrade the local
 * test chain mid-backfill: the faults start from LOCALTESTSERVICE_LATENCY_MS and
 * LOCALTESTSERVICE_ERROR_RATE and, when LOCALTESTSERVICE_FAULTS_FILE is set, follow that JSON
 * file (`{"latencyMs": 50, "errorRate": 0.1}`), re-read every 200 ms; a missing file keeps the
 * current faults, a malformed one is logged and ignored.
 */
export class FaultInjector {
  private timer: ReturnType<typeof setInterval> | null = null;
  private lastText = "";

  constructor(
    private faults: Faults,
    private readonly file: string,
    private readonly log: Logger,
  ) {}

  get current(): Faults {
    return this.faults;
  }

  start(): this {
    if (this.file === "" || this.timer) return this;
    this.poll();
    this.timer = setInterval(() => this.poll(), FAULTS_FILE_POLL_MS);
    this.timer.unref?.();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** wrap gives the backend with every op going through the faults; with none, ops run as before. */
  wrap(backend: Backend): Backend {
    const ops: Record<string, BackendOp> = {};
    for (const [name, op] of Object.entries(backend.ops)) {
      ops[name] = {
        ...op,
        handle: (params) => {
          const { latencyMs, errorRate } = this.faults;
          if (latencyMs === 0 && errorRate === 0) return op.handle(params);
          return Bun.sleep(latencyMs).then(() => {
            if (Math.random() < errorRate) throw new BackendError("BackendUnavailable", `injected fault (error rate ${errorRate})`, { retryable: true });
            return op.handle(params);
          });
        },
      };
    }
    return { ...backend, ops };
  }

  private poll(): void {
    let text: string;
    try {
      text = readFileSync(this.file, "utf8");
    } catch {
      return;
    }
    if (text === this.lastText) return;
    this.lastText = text;
    let parsed: z.infer<typeof FaultsFile>;
    try {
      parsed = FaultsFile.parse(JSON.parse(text));
    } catch (e) {
      this.log.warn({ file: this.file, error: e instanceof z.ZodError ? z.prettifyError(e) : (e as Error).message }, "faults file ignored: expected {latencyMs?: number >= 0, errorRate?: 0..1}");
      return;
    }
    this.faults = { latencyMs: parsed.latencyMs ?? this.faults.latencyMs, errorRate: parsed.errorRate ?? this.faults.errorRate };
    this.log.info({ file: this.file, ...this.faults }, "injected backend faults changed");
  }
}
