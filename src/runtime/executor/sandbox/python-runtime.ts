import { existsSync, lstatSync, realpathSync } from "node:fs";
import { dirname, resolve, sep } from "node:path";

/**
 * PythonRuntime: the interpreter and the folders it loads from, which a sandbox shows read-only
 * (the interpreter's path as called, a link, is shown as a link: a venv finds its pyvenv.cfg by it).
 */
export interface PythonRuntime {
  /** The interpreter's real path. */
  readonly executable: string;
  /** "3.11.2" */
  readonly version: string;
  /** Folders and files the interpreter needs (standard library, extension modules, libpython, shared libraries), nested ones dropped. */
  readonly paths: readonly string[];
}

/** Shared-library folders of the host (on merged-/usr systems /lib and /lib64 are links, shown as links). */
const LIBRARY_DIRS = ["/usr/lib", "/usr/lib64", "/usr/lib32", "/lib", "/lib64", "/lib32"];

const PROBE =
  "import sys, sysconfig, os\n" +
  "print(os.path.realpath(sys.executable))\n" +
  "print('%d.%d.%d' % sys.version_info[:3])\n" +
  "ps = [sys.executable, os.path.join(sys.prefix, 'pyvenv.cfg'), sysconfig.get_config_var('LIBDIR') or '', sys.base_prefix + '/lib'] + [sysconfig.get_paths()[k] for k in ('stdlib', 'platstdlib', 'purelib', 'platlib')] + sys.path\n" +
  "print('\\n'.join(p for p in ps if p))\n";

/**
 * probePythonRuntime asks the interpreter where it lives: its real path, its version, and the
 * folders it imports from and links against. A pyenv build keeps everything under its prefix;
 * Debian's keeps the standard library in /usr/lib/python3.X. /usr/bin is never shown whole
 * (only the interpreter file), so a sandboxed executor finds no shell or other programs.
 */
export function probePythonRuntime(python: string): PythonRuntime {
  const r = Bun.spawnSync([python, "-c", PROBE], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`EXECUTOR_PYTHON ${JSON.stringify(python)} cannot be run: ${r.stderr.toString().trim() || `exit ${r.exitCode}`}`);
  const [executable = python, version = "0.0.0", ...dirs] = r.stdout.toString().trim().split("\n");
  const candidates = [executable, ...dirs.map((d) => resolve(d)), ...LIBRARY_DIRS].filter((p) => existsSync(p));
  return { executable, version, paths: outermost(candidates) };
}

/** outermost keeps each path once, dropping those inside another kept path; links stay links (the sandbox recreates them). */
export function outermost(paths: readonly string[]): string[] {
  const real = [...new Set(paths.map((p) => (isLink(p) ? p : realpathSync(p))))].sort();
  return real.filter((p) => !real.some((q) => q !== p && !isLink(q) && (p.startsWith(q + sep) || q === sep)));
}

function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/** ancestors lists the folders above `path`, outermost first ("/a/b/c" -> ["/a", "/a/b"]). */
export function ancestors(path: string): string[] {
  const out: string[] = [];
  for (let d = dirname(path); d !== sep && d !== "."; d = dirname(d)) out.unshift(d);
  return out;
}
