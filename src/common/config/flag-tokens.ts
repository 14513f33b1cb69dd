import { parseArgs } from "node:util";

/** FlagToken is one piece of a command line: a `--name[=value]` flag or a positional argument. */
export type FlagToken =
  | {
      readonly kind: "flag";
      /** The name without its dashes. */
      readonly name: string;
      /** The argument as written (`--name=value`), for messages. */
      readonly raw: string;
      /** The value: inline after `=`, or the next argument for a valued flag; undefined if none. */
      readonly value: string | undefined;
    }
  | { readonly kind: "positional"; readonly value: string };

/**
 * flagTokens splits a command line with `node:util` parseArgs, the one flag parser of BlockX
 * (the CLI's command parser and the configuration loader both read its tokens). A flag named in
 * `valued` takes `--name=value` or the next argument, whatever it looks like (`--name --x` gives
 * the value `--x`); any other flag takes only an inline value. BlockX has no short flags: an
 * argument that does not start with `--` is positional (so `-5` is a negative number), and so is
 * everything after `--`. It never throws: which names are known is the caller's decision.
 */
export function flagTokens(argv: readonly string[], valued: ReadonlySet<string>): FlagToken[] {
  const options = Object.fromEntries([...valued].map((name) => [name, { type: "string" as const }]));
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const out: FlagToken[] = [];
  let lastShortIndex = -1;
  for (const t of tokens) {
    if (t.kind === "positional") out.push({ kind: "positional", value: t.value });
    else if (t.kind === "option" && t.rawName.startsWith("--")) out.push({ kind: "flag", name: t.name, raw: argv[t.index]!, value: t.value });
    else if (t.kind === "option" && t.index !== lastShortIndex) {
      // A short group such as `-12` comes as one token per letter: the argument once, as written.
      lastShortIndex = t.index;
      out.push({ kind: "positional", value: argv[t.index]! });
    }
  }
  return out;
}
