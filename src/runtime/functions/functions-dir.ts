import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import type { Logger } from "../../common/logging/logger";
import { digestOf, FunctionCodeView, isFunctionName, type FunctionCode, type FunctionSnapshot } from "./function-code-view";

/**
 * readFunctionsDir reads every `<name>.py` file directly in `dir` (not recursively) into a
 * name -> source map. Files whose name is not a Python identifier are skipped with a reason.
 */
export function readFunctionsDir(dir: string): { sources: Map<string, string>; skipped: string[] } {
  const sources = new Map<string, string>();
  const skipped: string[] = [];
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith(".py")) continue;
    const name = basename(file, ".py");
    const path = join(dir, file);
    if (!statSync(path).isFile()) continue;
    if (!isFunctionName(name)) {
      skipped.push(`${file}: the name is not a Python identifier`);
      continue;
    }
    sources.set(name, readFileSync(path, "utf8"));
  }
  return { sources, skipped };
}

/**
 * FunctionsDirPoller keeps a FunctionCodeView in step with FUNCTIONS_DIR by reading it every
 * `intervalMs` (files are small and few; polling needs no inotify limits and sees edits made
 * by any tool, including a rename over the file). A read error keeps the last good snapshot.
 */
export class FunctionsDirPoller {
  private timer: ReturnType<typeof setInterval> | null = null;
  private lastError = "";

  constructor(
    private readonly dir: string,
    private readonly view: FunctionCodeView,
    private readonly log: Logger,
    private readonly intervalMs = 1_000,
  ) {}

  /** refresh reads the directory once; returns whether the view changed. */
  refresh(): boolean {
    try {
      const { sources, skipped } = readFunctionsDir(this.dir);
      const changed = this.view.update(sources);
      if (changed) this.log.info({ component: "function-code", dir: this.dir, epoch: this.view.current().epoch, functions: sources.size, skipped }, "functions loaded");
      this.lastError = "";
      return changed;
    } catch (err) {
      const message = (err as Error).message;
      if (message !== this.lastError) this.log.warn({ component: "function-code", dir: this.dir, err }, "cannot read FUNCTIONS_DIR; keeping the last snapshot");
      this.lastError = message;
      return false;
    }
  }

  start(): void {
    this.refresh();
    this.timer = setInterval(() => this.refresh(), this.intervalMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}

/** FunctionsSource: the current snapshot of functions by name (null when none are configured). */
export interface FunctionsSource {
  /**
   * current returns the snapshot. With `mustHave`, a snapshot lacking that name is first
   * refreshed from the directory: a file copied in just before a submit is found at once
   * instead of after the next poll (`cp f.py "$FUNCTIONS_DIR"/ && blockx submit ...` works).
   */
  current(mustHave?: string): FunctionSnapshot | null;
  stop(): void;
}

/**
 * functionsFromDir starts polling FUNCTIONS_DIR into a fresh FunctionCodeView; an empty dir
 * means functions by name are not configured (inline sources only).
 */
export function functionsFromDir(dir: string, log: Logger): FunctionsSource {
  if (!dir) return { current: () => null, stop: () => {} };
  const view = new FunctionCodeView();
  const poller = new FunctionsDirPoller(dir, view, log);
  poller.start();
  return {
    current: (mustHave) => {
      if (mustHave !== undefined && !view.current().get(mustHave)) poller.refresh();
      return view.current();
    },
    stop: () => poller.stop(),
  };
}

/**
 * siblingFunctions is `blockx exec`'s function snapshot: a sub-call by name reads `<name>.py` beside
 * the file being run when it is asked for (a one-shot run has no FUNCTIONS_DIR to poll, and reading
 * every .py of, say, /tmp up front would be wasted work). Only identifiers are looked up, so a name
 * cannot reach outside the folder.
 */
export function siblingFunctions(dir: string): FunctionSnapshot {
  const read = new Map<string, FunctionCode | undefined>();
  return {
    epoch: 1,
    get(name) {
      if (!isFunctionName(name)) return undefined;
      if (!read.has(name)) {
        let source: string | undefined;
        try {
          source = readFileSync(join(dir, `${name}.py`), "utf8");
        } catch {
          source = undefined;
        }
        read.set(name, source === undefined ? undefined : { name, source, digest: digestOf(source) });
      }
      return read.get(name);
    },
    names: () => readFunctionsDir(dir).sources.keys().toArray(),
  };
}
