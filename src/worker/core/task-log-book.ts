/**
 * TaskLogBook keeps what each task's calls said (their ctx.log lines, stdout and stderr), per task,
 * bounded, for `blockx logs` and StreamTaskLogs. Pure: the task runner appends a finished call's
 * lines, the gRPC adapter reads and follows. Bounds, all in UTF-8 bytes of a line's text:
 * - a line longer than `bytesPerLine` is cut, saying how much was cut;
 * - a call's lines beyond `bytesPerCall` are dropped, with one line saying how many;
 * - a task's lines beyond `bytesPerTask` drop its oldest lines first, and a reader is told how
 *   many were dropped before the first line it gets;
 * - at most `maxTasks` tasks are kept: the Worker forgets a task's lines with the task.
 */

export interface TaskLogCaps {
  readonly bytesPerTask: number;
  readonly bytesPerLine: number;
  readonly bytesPerCall: number;
  readonly maxTasks: number;
}

export const DEFAULT_TASK_LOG_CAPS: TaskLogCaps = { bytesPerTask: 1 << 20, bytesPerLine: 4096, bytesPerCall: 64 << 10, maxTasks: 10_000 };

export type TaskLogStream = "log" | "stdout" | "stderr";

/** One line of a task's log, numbered in the order the task's lines were kept (from 1). */
export interface TaskLogEntry {
  readonly seq: number;
  /** When the line was written (ctx.log) or its call ended (printed output), epoch ms. */
  readonly timeMs: number;
  readonly callIndex: number;
  readonly attempt: number;
  /** The call's input as people name it: `block 1234`, `blocks 100..199`, `input 3`. */
  readonly input: string;
  readonly stream: TaskLogStream;
  /** ctx.log's level (debug, info, warning, error); "" for printed output. */
  readonly level: string;
  readonly text: string;
}

/** What one finished call said. */
export interface CallLog {
  readonly callIndex: number;
  readonly attempt: number;
  readonly input: string;
  readonly endedAtMs: number;
  readonly logs: readonly { readonly timeMs: number; readonly level: string; readonly message: string }[];
  readonly stdout: string;
  readonly stderr: string;
}

export interface TaskLogRead {
  readonly entries: readonly TaskLogEntry[];
  /** Lines of this task dropped (oldest first, over bytesPerTask) before the first entry returned. */
  readonly droppedBefore: number;
  /** The seq a follower continues after. */
  readonly lastSeq: number;
}

interface TaskLog {
  entries: TaskLogEntry[];
  /** Index of the first live entry in `entries` (dropped ones are spliced out in batches). */
  head: number;
  bytes: number;
  nextSeq: number;
  dropped: number;
}

const encoder = new TextEncoder();
const byteLength = (s: string): number => Buffer.byteLength(s, "utf8");

export class TaskLogBook {
  private readonly tasks = new Map<string, TaskLog>();

  constructor(private readonly caps: TaskLogCaps = DEFAULT_TASK_LOG_CAPS) {}

  /** append keeps a finished call's lines (ctx.log by time, then stdout, then stderr) and returns the entries kept. */
  append(taskId: string, call: CallLog): TaskLogEntry[] {
    const t = this.taskLog(taskId);
    const lines: { timeMs: number; stream: TaskLogStream; level: string; text: string }[] = [];
    for (const l of [...call.logs].sort((a, b) => a.timeMs - b.timeMs)) lines.push({ timeMs: l.timeMs, stream: "log", level: l.level, text: l.message });
    for (const [stream, text] of [["stdout", call.stdout], ["stderr", call.stderr]] as const) {
      for (const line of splitLines(text)) lines.push({ timeMs: call.endedAtMs, stream, level: "", text: line });
    }
    const kept: TaskLogEntry[] = [];
    let callBytes = 0;
    for (let i = 0; i < lines.length; i++) {
      const l = lines[i]!;
      const text = this.cut(l.text);
      const size = byteLength(text);
      if (callBytes + size > this.caps.bytesPerCall) {
        const rest = lines.length - i;
        kept.push(this.push(t, { ...l, text: `[${rest} more line${rest === 1 ? "" : "s"} of this call dropped: over ${this.caps.bytesPerCall} bytes per call]`, stream: "stderr", level: "" }, call));
        break;
      }
      callBytes += size;
      kept.push(this.push(t, { ...l, text }, call));
    }
    return kept;
  }

  /**
   * read returns the task's kept lines after `afterSeq` (0: from the first kept), or only the last
   * `tail` of them when tail > 0; null for a task with no lines ever kept (or forgotten).
   */
  read(taskId: string, o: { afterSeq?: number; tail?: number } = {}): TaskLogRead | null {
    const t = this.tasks.get(taskId);
    if (!t) return null;
    const afterSeq = Math.max(0, o.afterSeq ?? 0);
    const live = t.entries.slice(t.head);
    const firstLiveSeq = live[0]?.seq ?? t.nextSeq;
    // Seqs are consecutive and lines are dropped oldest first: seqs below firstLiveSeq were dropped.
    const after = live.slice(Math.max(0, afterSeq - firstLiveSeq + 1));
    const entries = o.tail && o.tail > 0 && after.length > o.tail ? after.slice(after.length - o.tail) : after;
    const droppedBefore = entries.length === after.length ? Math.max(0, firstLiveSeq - 1 - afterSeq) : 0;
    return { entries, droppedBefore, lastSeq: t.nextSeq - 1 };
  }

  /** bytesOf: the UTF-8 bytes of the task's kept lines' text (0 for none). */
  bytesOf(taskId: string): number {
    return this.tasks.get(taskId)?.bytes ?? 0;
  }

  /** dropped: how many of the task's lines were dropped over bytesPerTask so far. */
  dropped(taskId: string): number {
    return this.tasks.get(taskId)?.dropped ?? 0;
  }

  forget(taskId: string): void {
    this.tasks.delete(taskId);
  }

  get taskCount(): number {
    return this.tasks.size;
  }

  private taskLog(taskId: string): TaskLog {
    let t = this.tasks.get(taskId);
    if (!t) {
      if (this.tasks.size >= this.caps.maxTasks) this.tasks.delete(this.tasks.keys().next().value!); // the oldest task's lines go first
      t = { entries: [], head: 0, bytes: 0, nextSeq: 1, dropped: 0 };
      this.tasks.set(taskId, t);
    }
    return t;
  }

  private push(t: TaskLog, l: { timeMs: number; stream: TaskLogStream; level: string; text: string }, call: CallLog): TaskLogEntry {
    const e: TaskLogEntry = { seq: t.nextSeq++, timeMs: l.timeMs, callIndex: call.callIndex, attempt: call.attempt, input: call.input, stream: l.stream, level: l.level, text: l.text };
    t.entries.push(e);
    t.bytes += byteLength(e.text);
    while (t.bytes > this.caps.bytesPerTask && t.head < t.entries.length - 1) {
      t.bytes -= byteLength(t.entries[t.head]!.text);
      t.head++;
      t.dropped++;
    }
    if (t.head > 1024 && t.head * 2 > t.entries.length) {
      t.entries = t.entries.slice(t.head);
      t.head = 0;
    }
    return e;
  }

  private cut(text: string): string {
    if (byteLength(text) <= this.caps.bytesPerLine) return text;
    const bytes = encoder.encode(text);
    const keep = new TextDecoder().decode(bytes.subarray(0, this.caps.bytesPerLine)).replace(/\uFFFD$/, "");
    return `${keep} [${bytes.length - byteLength(keep)} bytes cut]`;
  }
}

function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines;
}
