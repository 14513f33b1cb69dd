import { flagName, type EnvVars } from "../common/config/env-config";
import { flagTokens } from "../common/config/flag-tokens";
import { UsageError } from "./usage-error";

/** FlagKind: a command's own flag is a switch (`--watch`) or takes a value (`--table NAME`, `--table=NAME`). */
export type FlagKind = "bool" | "value";

/** FlagSpecs: a command's own flags by name (without dashes). */
export type FlagSpecs = Readonly<Record<string, FlagKind>>;

/** PositionalSpec: the names of a command's positional arguments, required ones first (for messages). */
export interface PositionalSpec {
  readonly required?: readonly string[];
  readonly optional?: readonly string[];
}

/** ArgSpec: everything a command line may hold for one command. */
export interface ArgSpec {
  readonly flags?: FlagSpecs;
  /** Configuration variables, each also a flag (`--name=value`, see `flagName`). */
  readonly vars?: EnvVars;
  /** No positional argument at all when absent. */
  readonly positionals?: PositionalSpec;
}

/** ParsedArgs: a command's own flags, its positional arguments, and its configuration flags. */
export interface ParsedArgs {
  readonly positional: readonly string[];
  readonly flags: ReadonlyMap<string, string | true>;
  /** The configuration flags as `--name=value`, for the command's config loader (flags win over env). */
  readonly configArgv: readonly string[];
}

/**
 * parseCommandArgs reads one command's arguments with the one flag parser (`flagTokens`, on
 * `node:util` parseArgs). Every input is checked here, so that a command sees only what it
 * declared: an unknown flag, a value flag without its value, a switch given a value, and too
 * few or too many positional arguments are UsageErrors (exit 2) naming the argument. A flag
 * given twice keeps its last value.
 */
export function parseCommandArgs(argv: readonly string[], spec: ArgSpec): ParsedArgs {
  const own = new Map(Object.entries(spec.flags ?? {}));
  const config = new Set(Object.values(spec.vars ?? {}).map((v) => flagName(v.name).slice(2)));
  const valued = new Set([...config, ...[...own].filter(([, kind]) => kind === "value").map(([name]) => name)]);
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  const configArgv: string[] = [];
  for (const t of flagTokens(argv, valued)) {
    if (t.kind === "positional") {
      positional.push(t.value);
      continue;
    }
    const kind = own.get(t.name) ?? (config.has(t.name) ? "config" : undefined);
    if (kind === undefined) throw new UsageError(`unknown argument ${JSON.stringify(t.raw)} (see --help)`, "UNKNOWN_FLAG");
    if (kind === "bool") {
      if (t.value !== undefined) throw new UsageError(`--${t.name} takes no value`, "UNEXPECTED_VALUE");
      flags.set(t.name, true);
      continue;
    }
    if (t.value === undefined) throw new UsageError(`--${t.name}: expected a value`, "MISSING_VALUE");
    if (kind === "value") flags.set(t.name, t.value);
    else configArgv.push(`--${t.name}=${t.value}`);
  }
  const required = spec.positionals?.required ?? [];
  const optional = spec.positionals?.optional ?? [];
  if (positional.length < required.length) throw new UsageError(`missing ${required.slice(positional.length).join(" ")} (see --help)`, "MISSING_ARGUMENT");
  if (positional.length > required.length + optional.length) {
    const extra = positional.slice(required.length + optional.length);
    throw new UsageError(`unexpected argument${extra.length > 1 ? "s" : ""} ${extra.map((a) => JSON.stringify(a)).join(" ")} (see --help)`, "UNEXPECTED_ARGUMENT");
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
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v)) || Number(v) < min) throw new UsageError(`--${name}: expected an integer >= ${min}, got ${JSON.stringify(v)}`);
  return Number(v);
}
