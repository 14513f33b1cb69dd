import { readFileSync } from "node:fs";
import { z } from "zod";
import { BackendError } from "./backend-registry";

const faultsSchema = z.object({
  latencyMs: z.number().int().min(0).max(600_000).default(0),
  errorRate: z.number().min(0).max(1).default(0),
});

export type BackendFaultSettings = z.infer<typeof faultsSchema>;

const NO_FAULTS: BackendFaultSettings = { latencyMs: 0, errorRate: 0 };
const REREAD_MS = 200;

/**
 * BackendFaults makes a test backend slow and unreliable on demand, for soak and fault tests:
 * a JSON file `{"latencyMs": n, "errorRate": 0..1}` re-read at most every 200 ms, so a test
 * changes the backend's behaviour while the Worker runs. A missing or unreadable file means no
 * faults (a half-written file must not break the Worker). Injected errors are retryable
 * BackendUnavailable errors, as a real node that is down would give.
 */
export class BackendFaults {
  private settings: BackendFaultSettings = NO_FAULTS;
  private readAtMs = -Infinity;

  constructor(
    private readonly path: string,
    private readonly random: () => number = Math.random,
    private readonly now: () => number = Date.now,
  ) {}

  current(): BackendFaultSettings {
    const now = this.now();
    if (now - this.readAtMs >= REREAD_MS) {
      this.readAtMs = now;
      this.settings = readSettings(this.path);
    }
    return this.settings;
  }

  /** apply delays the request by the configured latency, then fails it with the configured probability. */
  async apply(what: string): Promise<void> {
    const { latencyMs, errorRate } = this.current();
    if (latencyMs > 0) await Bun.sleep(latencyMs);
    if (errorRate > 0 && this.random() < errorRate) {
      throw new BackendError("BackendUnavailable", `${what}: injected failure (fault file ${this.path}, errorRate ${errorRate})`, true);
    }
  }
}

function readSettings(path: string): BackendFaultSettings {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return NO_FAULTS;
  }
  try {
    const parsed = faultsSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : NO_FAULTS;
  } catch {
    return NO_FAULTS;
  }
}
