import { z } from "zod";
import { SyncInvokerError, SyncInvokerErrorCode } from "../core/sync-invoker-error";

/** Diagnostic is one finding of a precheck (syncinvoker.v1.Diagnostic). */
export interface Diagnostic {
  readonly severity: "error" | "warning";
  readonly code: string;
  readonly message: string;
  /** 1-based; 0 when unknown. */
  readonly line: number;
  readonly column: number;
}

const answerSchema = z.object({
  diagnostics: z.array(
    z.object({
      severity: z.enum(["error", "warning"]),
      code: z.string(),
      message: z.string(),
      line: z.number().int().min(0),
      column: z.number().int().min(0),
    }),
  ),
});

export interface PrecheckRunnerOptions {
  /** The resolved interpreter (absolute path). */
  readonly python: string;
  /** PYTHONPATH holding blockx_executor. */
  readonly pythonPath: string;
  /** Prechecks at once; one more is refused with QUEUE_FULL. */
  readonly maxConcurrent: number;
  readonly timeoutMs: number;
}

/**
 * PrecheckRunner checks a source in a dedicated short-lived Python process
 * (`python -m blockx_executor.precheck`, which only parses and compiles, see precheck.py)
 * rather than in a pool executor. Why a separate process: the executors' compile path runs the
 * module body by design (it is the first step of a call), and a pathological source (deep
 * nesting, a huge literal) that stalls or crashes the parser then costs one throwaway
 * process, never an executor that is serving calls. The price is one interpreter start per
 * precheck (about 20-60 ms), fine for an authoring tool.
 */
export class PrecheckRunner {
  private running = 0;

  constructor(private readonly opts: PrecheckRunnerOptions) {}

  async check(source: string, entry: string, filename: string): Promise<Diagnostic[]> {
    if (this.running >= this.opts.maxConcurrent) {
      throw new SyncInvokerError(SyncInvokerErrorCode.QueueFull, `${this.running} prechecks are running (the limit); retry shortly`);
    }
    this.running++;
    try {
      return await this.spawn(JSON.stringify({ source, entry, filename }));
    } finally {
      this.running--;
    }
  }

  private async spawn(request: string): Promise<Diagnostic[]> {
    const proc = Bun.spawn([this.opts.python, "-m", "blockx_executor.precheck"], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", PYTHONPATH: this.opts.pythonPath, PYTHONDONTWRITEBYTECODE: "1", PYTHONSAFEPATH: "1" },
      cwd: "/",
      stdin: new TextEncoder().encode(request),
      stdout: "pipe",
      stderr: "pipe",
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      proc.kill("SIGKILL");
    }, this.opts.timeoutMs);
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    clearTimeout(timer);
    if (timedOut) throw new SyncInvokerError(SyncInvokerErrorCode.Internal, `precheck did not finish within ${this.opts.timeoutMs} ms`);
    if (code !== 0) throw new SyncInvokerError(SyncInvokerErrorCode.Internal, `precheck process failed (exit code ${code}): ${stderr.trim().split("\n").slice(-1)[0] ?? ""}`);
    let json: unknown;
    try {
      json = JSON.parse(stdout);
    } catch {
      throw new SyncInvokerError(SyncInvokerErrorCode.Internal, `precheck answered something that is not JSON: ${stdout.slice(0, 200)}`);
    }
    const parsed = answerSchema.safeParse(json);
    if (!parsed.success) throw new SyncInvokerError(SyncInvokerErrorCode.Internal, `precheck answered something unexpected: ${z.prettifyError(parsed.error)}`);
    return parsed.data.diagnostics;
  }
}
