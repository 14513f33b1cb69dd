import { existsSync } from "node:fs";

/**
 * threadEntry: the module a Bun Worker thread runs. From source it is the .ts file itself; in the
 * compiled binary it is an extra entry point of the build (scripts/compile.sh lists each), which
 * Bun embeds under /$bunfs/root relative to the entries' common folder (src/), with .js. `fromSrc`
 * is the module's path below src/ without extension (e.g. "runtime/chains/localtestservice/
 * synthetic-chain-thread"); `sourceUrl` its URL from source (`new URL("./x.ts", import.meta.url)`).
 */
export function threadEntry(callerUrl: string, fromSrc: string, sourceUrl: URL): string {
  if (!callerUrl.startsWith("file:///$bunfs/")) return sourceUrl.href;
  const embedded = [`/$bunfs/root/${fromSrc}.js`, `/$bunfs/root/src/${fromSrc}.js`];
  return embedded.find((p) => existsSync(p)) ?? embedded[0]!;
}
