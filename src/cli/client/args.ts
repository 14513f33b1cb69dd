import { UsageError } from "../exec-command";

export type FlagKind = "bool" | "value";

/** ParsedArgs: a command's own flags, its positional arguments, and the rest (configuration flags). */
export interface ParsedArgs {
  readonly positional: string[];
  readonly flags: Map<string, string | true>;
  /** Flags for loadClientConfig (e.g. --blockx-coordinator-addrs=...), with their values. */
  readonly configArgv: string[];
}

/**
 * parseArgs separates a command's own flags (`spec`) from configuration flags, which all take
 * a value and are validated later by loadEnvConfig (so a typo is still an error there).
 */
export function parseArgs(argv: readonly string[], spec: Readonly<Record<string, FlagKind>>): ParsedArgs {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  const configArgv: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("--")) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    const kind = spec[name];
    if (kind === "bool") {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`);
      flags.set(name, true);
    } else if (kind === "value") {
      const value = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined) throw new UsageError(`--${name}: expected a value`);
      flags.set(name, value);
    } else {
      configArgv.push(arg);
      if (eq < 0 && i + 1 < argv.length) configArgv.push(argv[++i]!);
    }
  }
  return { positional, flags, configArgv };
}

export function flagValue(args: ParsedArgs, name: string): string | undefined {
  const v = args.flags.get(name);
  return typeof v === "string" ? v : undefined;
}

export function intFlag(args: ParsedArgs, name: string, min: number): number | undefined {
  const v = flagValue(args, name);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || Number(v) < min) throw new UsageError(`--${name}: expected an integer >= ${min}, got ${JSON.stringify(v)}`);
  return Number(v);
}
