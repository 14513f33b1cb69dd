import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { basename, join, sep } from "node:path";
import type { Logger } from "../../common/logging/logger";
import { digestOf, FunctionCodeView, isFunctionName, type FunctionCode, type FunctionSnapshot } from "./function-code-view";

/** Why a symbolic link out of the folder is not read: what a task naming it is told (never the target's content). */
export const LINK_OUT_OF_DIR = "is a symbolic link leading out of FUNCTIONS_DIR: refused, and its target is never read (copy the file in, or link within the folder)";

/**
 * readFunctionFile reads `<dir>/<file>` as a function's source only if it is, after following any
 * symbolic links, a regular file inside `dir` (`dirReal`: dir's real path): a link to the Worker's
 * TLS key, say, submitted by name, came back quoted in a syntax-error traceback. The resolved path
 * is opened with O_NOFOLLOW and checked again on the open file, so a link swapped in between is
 * not followed either. Returns the source, or why not (`undefined` for what is not a file at all).
 */
export function readFunctionFile(dir: string, dirReal: string, file: string): { source: string } | { refused: string } | undefined {
  const path = join(dir, file);
  let real = path;
  if (lstatSync(path).isSymbolicLink()) {
    try {
      real = realpathSync(path);
    } catch {
      return undefined; // a dangling link: nothing to read
    }
    if (!real.startsWith(dirReal + sep)) return { refused: `${file} ${LINK_OUT_OF_DIR}` };
  }
  let fd: number;
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ELOOP") return { refused: `${file} ${LINK_OUT_OF_DIR}` };
    throw e;
  }
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    return { source: readFileSync(fd, "utf8") };
  } finally {
    closeSync(fd);
  }
}

/**
 * readFunctionsDir reads every `<name>.py` file directly in `dir` (not recursively) into a
 * name -> source map. Files whose name is not a Python identifier are skipped with a reason;
 * symbolic links leading out of `dir` are refused (`refused`, by name) and never read.
 */
export function readFunctionsDir(dir: string): { sources: Map<string, string>; skipped: string[]; refused: Map<string, string> } {
  const sources = new Map<string, string>();
  const skipped: string[] = [];
  const refused = new Map<string, string>();
  const dirReal = realpathSync(dir);
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith(".py")) continue;
    const name = basename(file, ".py");
    if (!isFunctionName(name)) {
      skipped.push(`${file}: the name is not a Python identifier`);
      continue;
    }
    const read = readFunctionFile(dir, dirReal, file);
    if (read === undefined) continue;
    if ("refused" in read) {
      skipped.push(read.refused);
      refused.set(name, read.refused);
    } else sources.set(name, read.source);
  }
  return { sources, skipped, refused };
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
      const { sources, skipped, refused } = readFunctionsDir(this.dir);
      const changed = this.view.update(sources, refused);
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
          const read = readFunctionFile(dir, realpathSync(dir), `${name}.py`);
          source = read && "source" in read ? read.source : undefined;
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
