import { existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

/**
 * pathWithout builds a PATH of one folder holding a link to every command of `path` but the named
 * ones (the first of each name wins, as a shell's lookup would), and `extra` scripts written in
 * their place: a machine that lacks those commands, or has broken ones, without touching the
 * machine's own. The folder is removed by `remove()`.
 */
export function pathWithout(names: readonly string[], extra: Record<string, string> = {}, path = process.env.PATH ?? "/usr/bin:/bin"): { path: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "blockx-path-"));
  const seen = new Set<string>(names);
  for (const [name, script] of Object.entries(extra)) {
    writeFileSync(join(dir, name), script, { mode: 0o755 });
    seen.add(name);
  }
  for (const folder of path.split(delimiter)) {
    if (folder === "" || !existsSync(folder)) continue;
    let entries: string[];
    try {
      entries = readdirSync(folder);
    } catch {
      continue;
    }
    for (const name of entries) {
      if (seen.has(name)) continue;
      seen.add(name);
      symlinkSync(join(folder, name), join(dir, name));
    }
  }
  return { path: dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
