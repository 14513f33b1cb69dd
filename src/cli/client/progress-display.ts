import type { Progress } from "../../sdk/core/progress";

export interface ProgressLine {
  readonly progress: Progress;
  readonly state: string;
  readonly attempt: number;
}

function duration(ms: number | undefined): string {
  if (ms === undefined) return "--:--";
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const mm = String(Math.floor((s % 3600) / 60)).padStart(2, "0");
  const ss = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${mm}:${ss}` : `${mm}:${ss}`;
}

function rate(r: number): string {
  return r >= 100 ? r.toFixed(0) : r.toFixed(1);
}

/** renderBar: the terminal line, e.g. `[#########...........]  45%  450/1000 calls  123.4/s  ETA 00:05  RUNNING`. */
export function renderBar(line: ProgressLine, width = 24): string {
  const p = line.progress;
  const filled = Math.round(p.fraction * width);
  const bar = "#".repeat(filled) + ".".repeat(width - filled);
  const failed = p.failed > 0 ? `  ${p.failed} failed` : "";
  const attempt = line.attempt > 1 ? `  attempt ${line.attempt}` : "";
  return `[${bar}] ${String(Math.floor(p.fraction * 100)).padStart(3)}%  ${p.done}/${p.total} calls  ${rate(p.ratePerS)}/s  ETA ${duration(p.etaMs)}  ${line.state}${failed}${attempt}`;
}

/** renderPlain: one line for logs and pipes (no control characters). */
export function renderPlain(line: ProgressLine): string {
  const p = line.progress;
  return `progress: ${p.done}/${p.total} calls (${Math.floor(p.fraction * 100)}%), ${rate(p.ratePerS)} calls/s, ETA ${duration(p.etaMs)}, ${line.state}${p.failed > 0 ? `, ${p.failed} failed` : ""}${line.attempt > 1 ? `, attempt ${line.attempt}` : ""}`;
}

/**
 * ProgressDisplay shows progress on a stream: on a terminal one line redrawn in place (at most
 * every redrawMs); otherwise a plain line every plainEveryMs and on every state change, so a
 * log file stays readable. `finish` always prints the final line.
 */
export class ProgressDisplay {
  private lastDrawMs = -Infinity;
  private lastState = "";
  private last: ProgressLine | undefined;

  constructor(
    private readonly out: { write(s: string): unknown; isTTY?: boolean },
    private readonly now: () => number = Date.now,
    private readonly redrawMs = 100,
    private readonly plainEveryMs = 2000,
  ) {}

  update(line: ProgressLine): void {
    this.last = line;
    const t = this.now();
    const changed = line.state !== this.lastState;
    if (this.out.isTTY) {
      if (changed || t - this.lastDrawMs >= this.redrawMs) this.draw(line, t);
    } else if (changed || t - this.lastDrawMs >= this.plainEveryMs) {
      this.draw(line, t);
    }
  }

  finish(): void {
    if (this.last) this.draw(this.last, this.now());
    if (this.out.isTTY && this.last) this.out.write("\n");
  }

  private draw(line: ProgressLine, t: number): void {
    this.lastDrawMs = t;
    this.lastState = line.state;
    if (this.out.isTTY) this.out.write(`\r\x1b[2K${renderBar(line)}`);
    else this.out.write(renderPlain(line) + "\n");
  }
}
