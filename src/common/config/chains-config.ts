import { existsSync, readFileSync } from "node:fs";
import { z } from "zod";
import { ConfigError } from "./env-config";

/**
 * The chains config says which source serves each chain and how: a node's JSON-RPC endpoints
 * (`rpc`) or the synthetic local test chain (`localtestservice`). The Worker reads it from
 * CHAINS_CONFIG; the Sync Invoker will read the same file with the same loader, hence common/.
 */

const CHAIN_NAME = /^[a-z][a-z0-9_-]{0,63}$/;

const httpUrl = z
  .string()
  .url()
  .refine((s) => /^https?:\/\//.test(s), { message: "expected an http:// or https:// URL" });

const rpcChain = z
  .object({
    source: z.literal("rpc"),
    endpoints: z.array(httpUrl).min(1, { message: "expected at least one endpoint URL" }),
    chainId: z.number().int().positive().optional(),
    finalityDepth: z.number().int().min(0).max(100_000).optional(),
    /** Most JSON-RPC requests in one HTTP batch. */
    maxBatchSize: z.number().int().min(1).max(1000).default(50),
    /** One HTTP request's timeout. */
    timeoutMs: z.number().int().min(1).max(60_000).default(2_000),
    /** Tries of one request over the endpoints, transient failures only. */
    maxAttempts: z.number().int().min(1).max(20).default(4),
    /** First retry backoff; doubled each retry, capped at 8x. */
    retryBackoffMs: z.number().int().min(0).max(10_000).default(100),
    /** All tries of one request end within this (it is charged to the call's 5000 ms budget). */
    requestBudgetMs: z.number().int().min(1).max(600_000).default(4_000),
    /** rpc.send (transactions, signing) reaches this chain's node only when true. */
    allowSend: z.boolean().optional(),
  })
  .strict();

const localChain = z
  .object({
    source: z.literal("localtestservice"),
    finalityDepth: z.number().int().min(0).max(100_000).optional(),
    allowSend: z.boolean().optional(),
  })
  .strict();

const chainSchema = z.discriminatedUnion("source", [rpcChain, localChain]);

const chainsSchema = z
  .object({
    chains: z.record(z.string().regex(CHAIN_NAME, { message: "chain names are lowercase: letters, digits, _ and -" }), chainSchema),
  })
  .strict();

export type RpcChainConfig = z.infer<typeof rpcChain>;
export type LocalChainConfig = z.infer<typeof localChain>;
export type ChainConfig = z.infer<typeof chainSchema>;

/**
 * ChainsConfig: `chains` by name, or `null` for the default: every chain name is served by the
 * local test chain (so a Worker with nothing configured keeps working).
 */
export interface ChainsConfig {
  readonly chains: Readonly<Record<string, ChainConfig>> | null;
}

export const DEFAULT_CHAINS_CONFIG: ChainsConfig = Object.freeze({ chains: null });

function path(issue: z.core.$ZodIssue): string {
  return issue.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("").replace(/^\./, "");
}

/** parseChainsConfig validates a chains config document; problems name the field (`chains.eth.endpoints[0]`). */
export function parseChainsConfig(doc: unknown, varName = "CHAINS_CONFIG"): ChainsConfig {
  const parsed = chainsSchema.safeParse(doc);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((i) => `${varName}: ${path(i) || "(document)"}: ${i.message}`));
  return Object.freeze({ chains: Object.freeze(parsed.data.chains) });
}

/**
 * loadChainsConfig reads CHAINS_CONFIG: empty = the default, text starting with `{` = inline
 * JSON, anything else = the path of a JSON file.
 */
export function loadChainsConfig(raw: string, varName = "CHAINS_CONFIG"): ChainsConfig {
  const text = raw.trim();
  if (text === "") return DEFAULT_CHAINS_CONFIG;
  let json = text;
  if (!text.startsWith("{")) {
    if (!existsSync(text)) throw new ConfigError([`${varName}: no such file ${JSON.stringify(text)} (give inline JSON starting with { or a file path)`]);
    try {
      json = readFileSync(text, "utf8");
    } catch (e) {
      throw new ConfigError([`${varName}: cannot read ${JSON.stringify(text)}: ${(e as Error).message}`]);
    }
  }
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch (e) {
    // The parser quotes the text it stopped at, which may be a node URL's key: name the place only.
    const where = /position \d+|line \d+|column \d+/.exec((e as Error).message)?.[0];
    throw new ConfigError([`${varName}: not valid JSON${where ? ` (at ${where})` : ""}${text === json ? "" : ` in ${JSON.stringify(text)}`} (the text is not quoted: it may hold node URLs with keys)`]);
  }
  return parseChainsConfig(doc, varName);
}
