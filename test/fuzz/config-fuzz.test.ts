/**
 * Hostile input to the env and config parsers (issue 51 item 8): every variable every command
 * declares, and every role's whole loader (its cross-variable rules included), fed seeded hostile
 * values. Each case must end with a value or a ConfigError naming only declared variables: never
 * another exception (a parser's crash is a stack trace where the operator needed a sentence).
 * FUZZ_CASES sets the cases per loader (make fuzz raises it).
 */
import { describe, expect, test } from "bun:test";
import { loadChainsConfig } from "../../src/common/config/chains-config";
import { ConfigError, loadEnvConfig, type EnvVars } from "../../src/common/config/env-config";
import { blockxCommands } from "../../src/commands";
import { loadCoordinatorRuntimeConfigFromEnv } from "../../src/coordinator/app/config";
import { blockProfile, bundleProfile } from "../../src/coordinator/app/profile";
import { loadDevConfig } from "../../src/dev/app/config";
import { loadProxyConfig } from "../../src/proxy/app/config";
import { loadClientConfig } from "../../src/sdk/client-config";
import { loadSyncInvokerConfig } from "../../src/syncinvoker/app/config";
import { loadWorkerRuntimeConfigFromEnv } from "../../src/worker/app/config";
import { blockWorkerProfile, bundleWorkerProfile } from "../../src/worker/core/profile";
import { mulberry32 } from "../support/mulberry32";

const CASES = Number(process.env.FUZZ_CASES ?? 22) * 10;
const SEED = Number(process.env.FUZZ_SEED ?? 20261206);

const HOSTILE = [
  "",
  " ",
  "-1",
  "0",
  "1e309",
  "-1e309",
  "NaN",
  "Infinity",
  "9".repeat(400),
  "1.5",
  "0x10",
  "010",
  "true",
  "null",
  "[]",
  "{}",
  "\u0000",
  "\u202e",
  "a".repeat(100_000),
  "[".repeat(50_000),
  '{"a":'.repeat(20_000),
  "postgres://u:p@h:99999/x",
  "postgress://blockx:hunter2@db/x",
  "parquet://host/x",
  "sqlite:///../../../etc/passwd",
  "unix:/etc/passwd",
  ":::",
  "127.0.0.1:99999",
  "127.0.0.1:-1",
  "[::1]:0",
  "a,b,,c,",
  "--flag",
  "$(reboot)",
  "../../..",
  "/dev/zero",
  "/proc/self/mem",
];

function hostileEnv(rnd: () => number, names: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const n of names) {
    if (rnd() < 0.3) env[n] = rnd() < 0.85 ? HOSTILE[Math.floor(rnd() * HOSTILE.length)]! : String.fromCharCode(...Array.from({ length: Math.floor(rnd() * 64) }, () => Math.floor(rnd() * 0xd7ff)));
  }
  return env;
}

/** tryLoad runs one case: a value, or a ConfigError whose every problem names a declared variable. Anything else is a finding. */
function tryLoad(load: () => unknown, names: readonly string[], env: Record<string, string>): string | null {
  try {
    load();
    return null;
  } catch (e) {
    if (!(e instanceof ConfigError)) return `${(e as Error).name}: ${(e as Error).message.slice(0, 200)} for ${JSON.stringify(Object.keys(env))}`;
    const anonymous = e.problems.filter((p) => !names.some((n) => p.includes(n)));
    return anonymous.length > 0 ? `a problem naming no variable: ${anonymous[0]!.slice(0, 200)}` : null;
  }
}

function fuzzLoader(name: string, vars: EnvVars, load: (env: Record<string, string>) => unknown, seed: number): { cases: number; findings: string[] } {
  const rnd = mulberry32(seed);
  const names = Object.values(vars).map((v) => v.name);
  const findings: string[] = [];
  for (let i = 0; i < CASES; i++) {
    const env = hostileEnv(rnd, names);
    const f = tryLoad(() => load(env), names, env);
    if (f) findings.push(`${name}: ${f}`);
  }
  return { cases: CASES, findings };
}

describe("hostile values to every env and config parser", () => {
  test("every variable every command declares: a value or a ConfigError naming it", () => {
    const commands = blockxCommands().list();
    const findings: string[] = [];
    let cases = 0;
    for (const [i, c] of commands.entries()) {
      const r = fuzzLoader(c.name, c.vars, (env) => loadEnvConfig(c.vars, env), SEED + i);
      cases += r.cases;
      findings.push(...r.findings);
    }
    console.log(`config fuzz: ${commands.length} commands' variables, ${cases} cases, ${findings.length} findings`);
    expect(findings.slice(0, 10)).toEqual([]);
  });

  test("every role's whole loader, its cross-variable rules included", () => {
    const commands = new Map(blockxCommands().list().map((c) => [c.name, c]));
    const varsOf = (name: string) => commands.get(name)!.vars;
    const loaders: [string, (env: Record<string, string>) => unknown][] = [
      ["worker", (env) => loadWorkerRuntimeConfigFromEnv(blockWorkerProfile, env)],
      ["bundle-worker", (env) => loadWorkerRuntimeConfigFromEnv(bundleWorkerProfile, env)],
      ["coordinator", (env) => loadCoordinatorRuntimeConfigFromEnv(blockProfile, env)],
      ["bundle-coordinator", (env) => loadCoordinatorRuntimeConfigFromEnv(bundleProfile, env)],
      ["syncinvoker", (env) => loadSyncInvokerConfig(env)],
      ["proxy", (env) => loadProxyConfig(env, [])],
      ["dev", (env) => loadDevConfig(env, [])],
      ["submit", (env) => loadClientConfig(env)],
    ];
    const findings: string[] = [];
    let cases = 0;
    for (const [i, [name, load]] of loaders.entries()) {
      const vars = varsOf(name);
      const r = fuzzLoader(name, vars, load, SEED + 100 + i);
      cases += r.cases;
      findings.push(...r.findings);
    }
    console.log(`role loaders fuzz: ${loaders.length} loaders, ${cases} cases, ${findings.length} findings`);
    expect(findings.slice(0, 10)).toEqual([]);
  });

  test("CHAINS_CONFIG: hostile documents are a ConfigError naming the variable", () => {
    const rnd = mulberry32(SEED + 200);
    const docs = [
      ...HOSTILE,
      '{"chains":' + "[".repeat(10_000),
      '{"chains":[' + '{"name":"x","backend":"rpc","endpoints":["http://a"]},'.repeat(5_000) + "{}]}",
      '{"chains":[{"name":"' + "x".repeat(100_000) + '"}]}',
      '{"chains":[{"name":"eth","chainId":"1e999","backend":"rpc"}]}',
      '{"__proto__":{"chains":[]}}',
    ];
    const findings: string[] = [];
    for (let i = 0; i < CASES; i++) {
      const raw = rnd() < 0.5 ? docs[Math.floor(rnd() * docs.length)]! : docs[Math.floor(rnd() * docs.length)]!.slice(0, Math.floor(rnd() * 200));
      const f = tryLoad(() => loadChainsConfig(raw.startsWith("{") || raw.startsWith("[") ? raw : `{${raw}`), ["CHAINS_CONFIG"], {});
      if (f) findings.push(f);
    }
    expect(findings.slice(0, 10)).toEqual([]);
  });
});
