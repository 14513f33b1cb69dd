import { z } from "zod";
import { flagTokens } from "./flag-tokens";
import { rememberSecret, shownSecret, type SecretKind } from "./secret-text";

/**
 * EnvVar describes one configuration variable of a role: its environment name, the default
 * (as the raw text an operator would write), the rule in words, and the zod schema that
 * turns the raw text into a typed value. `--help` prints these; `loadEnvConfig` applies them.
 * A variable that can hold a secret has `secret` set: its value is never printed (see secret-text.ts).
 */
export interface EnvVar<T> {
  readonly name: string;
  readonly defaultRaw: string;
  readonly rule: string;
  readonly description: string;
  readonly schema: z.ZodType<T, string>;
  /** Set when the value can hold a secret: `url` (shown with its credentials replaced) or `value` (never shown). */
  readonly secret?: SecretKind;
}

export type EnvVars = Record<string, EnvVar<unknown>>;
export type EnvValues<V extends EnvVars> = { readonly [K in keyof V]: V[K] extends EnvVar<infer T> ? T : never };

/** ConfigError lists every invalid variable; the process prints it and exits 2. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join("\n"));
    this.name = "ConfigError";
  }
}

export function envVar<T>(
  name: string,
  defaultRaw: string,
  rule: string,
  description: string,
  schema: z.ZodType<T, string>,
  options: { readonly secret?: SecretKind } = {},
): EnvVar<T> {
  return { name, defaultRaw, rule, description, schema, ...(options.secret ? { secret: options.secret } : {}) };
}

// Schema builders whose failures all read "expected <rule>"; the loader adds name and value.

/** An integer in [min, max]. */
export function intSchema(min: number, max = Number.MAX_SAFE_INTEGER): z.ZodType<number, string> {
  return z
    .string()
    .trim()
    .regex(/^-?\d+$/)
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
}

/** A number in (minExclusive, max]. */
export function fractionSchema(minExclusive: number, max: number): z.ZodType<number, string> {
  return z
    .string()
    .trim()
    .regex(/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/)
    .transform(Number)
    .pipe(z.number().gt(minExclusive).lte(max));
}

/** A comma-separated list of non-empty items (whitespace around items ignored). */
export function listSchema(): z.ZodType<string[], string> {
  return z
    .string()
    .transform((s) =>
      s
        .split(",")
        .map((x) => x.trim())
        .filter((x) => x.length > 0),
    )
    .pipe(z.array(z.string()).min(1));
}

/** host:port, :port or [v6]:port; an empty host means every interface. */
export function listenAddrSchema(allowEmpty = false): z.ZodType<string, string> {
  const re = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.\-_]*):(\d{1,5})$/;
  return z
    .string()
    .trim()
    .refine((s) => (allowEmpty && s === "") || (re.test(s) && Number(re.exec(s)![2]) <= 65535));
}

export function enumSchema<const T extends readonly [string, ...string[]]>(values: T): z.ZodType<T[number], string> {
  return z.string().trim().pipe(z.enum(values));
}

export function stringSchema(): z.ZodType<string, string> {
  return z.string();
}

/**
 * flagName turns COORDINATOR_MAX_CANDIDATES into --coordinator-max-candidates; a flag given
 * on the command line overrides the environment.
 */
export function flagName(envName: string): string {
  return "--" + envName.toLowerCase().replace(/_/g, "-");
}

/**
 * parseFlags reads `--name=value` and `--name value` pairs for the declared variables (tokens from
 * `flagTokens`, the one flag parser). Unknown flags are errors (a typo must not be silently ignored).
 */
export function parseFlags(vars: EnvVars, argv: readonly string[]): { overrides: Map<string, string>; problems: string[] } {
  const byFlag = new Map(Object.values(vars).map((v) => [flagName(v.name).slice(2), v.name]));
  const overrides = new Map<string, string>();
  const problems: string[] = [];
  for (const t of flagTokens(argv, new Set(byFlag.keys()))) {
    const name = t.kind === "flag" ? byFlag.get(t.name) : undefined;
    if (t.kind === "positional" || name === undefined) problems.push(`unknown argument ${JSON.stringify(t.kind === "flag" ? t.raw : t.value)} (see --help)`);
    else if (t.value === undefined) problems.push(`--${t.name}: expected a value`);
    else overrides.set(name, t.value);
  }
  return { overrides, problems };
}

/**
 * loadEnvConfig validates every variable (flags first, then the environment, then the default)
 * and returns frozen typed values, or throws a ConfigError naming each bad variable, its rule
 * and the value given: `COORDINATOR_MAX_CANDIDATES: expected an integer >= 1, got "abc"`. A secret
 * variable's value is remembered for redaction and never quoted whole (`shownSecret`).
 */
export function loadEnvConfig<V extends EnvVars>(
  vars: V,
  env: Readonly<Record<string, string | undefined>>,
  argv: readonly string[] = [],
): EnvValues<V> {
  const { overrides, problems } = parseFlags(vars, argv);
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(vars)) {
    const raw = overrides.get(v.name) ?? env[v.name] ?? v.defaultRaw;
    if (v.secret) rememberSecret(v.secret, raw);
    const parsed = v.schema.safeParse(raw);
    if (parsed.success) out[key] = parsed.data;
    else problems.push(`${v.name}: expected ${v.rule}, got ${v.secret ? shownSecret(v.secret, raw) : JSON.stringify(raw)}`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(out) as EnvValues<V>;
}

/** renderEnvHelp lists every variable with its default, rule and meaning, for `--help`. */
export function renderEnvHelp(vars: EnvVars): string {
  const rows = Object.values(vars);
  const width = Math.max(...rows.map((v) => v.name.length));
  return rows
    .map((v) => {
      const def = v.defaultRaw === "" ? "(empty)" : v.defaultRaw;
      const secret = v.secret ? "; a secret: never printed" : "";
      return `  ${v.name.padEnd(width)}  default ${def}\n  ${" ".repeat(width)}  ${v.description} (${v.rule}${secret}; flag ${flagName(v.name)})`;
    })
    .join("\n");
}
