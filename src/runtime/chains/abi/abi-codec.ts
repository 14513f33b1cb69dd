/**
 * ABI decoding for the `logicalTypes` backend: event logs, call inputs and call results decoded
 * by a contract ABI into typed values, plus Keccak-256 event signatures and function selectors.
 *
 * The codec itself is viem's (`decodeAbiParameters`, `parseAbi`, selectors over @noble/hashes'
 * Keccak-256): a well-kept library whose decoder handles every ABI type (nested tuples, dynamic
 * arrays, intN/uintN, bytesN) and returns EIP-55 checksummed addresses. What is ours: matching a
 * log to its event (topic0, anonymous events, several events sharing a topic0 such as ERC-20 and
 * ERC-721 `Transfer`), indexed arguments from topics, per-log failures instead of a failed request,
 * bounds on every input, and the JSON text handed to Python with integers written exactly.
 *
 * Pure: no IO, no clock. Every failure is an AbiError with a code.
 */
import {
  checksumAddress,
  decodeAbiParameters,
  parseAbi,
  toEventSelector,
  toEventSignature,
  toFunctionSelector,
  toFunctionSignature,
  type AbiEvent,
  type AbiFunction,
  type AbiParameter,
} from "viem";
import { z } from "zod";

/** AbiErrorCode: what was wrong, for the backend's error type. */
export type AbiErrorCode = "InvalidAbi" | "InvalidParams" | "DecodeFailed";

/** AbiError is the one error type of the codec; `code` becomes the BackendError type Python sees. */
export class AbiError extends Error {
  constructor(
    readonly code: AbiErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Bounds on what one request may carry. */
export const MAX_ABI_ITEMS = 2_000;
export const MAX_ABI_TEXT_CHARS = 1_000_000;
export const MAX_LOGS_PER_REQUEST = 100_000;
export const MAX_HEX_CHARS = 4 * 1024 * 1024;
const MAX_PARAM_DEPTH = 16;

const TYPE = /^(?:u?int(?:8|16|24|32|40|48|56|64|72|80|88|96|104|112|120|128|136|144|152|160|168|176|184|192|200|208|216|224|232|240|248|256)?|address|bool|string|bytes(?:[1-9]|[12][0-9]|3[0-2])?|tuple)(?:\[\d*\])*$/;

interface ParamShape {
  name?: string | undefined;
  type: string;
  indexed?: boolean | undefined;
  components?: ParamShape[] | undefined;
  internalType?: string | undefined;
}
const paramSchema: z.ZodType<ParamShape> = z.lazy(() =>
  z.object({
    name: z.string().max(256).optional(),
    type: z.string().regex(TYPE, "an ABI type (uint256, address, bytes32, tuple[], ...)"),
    indexed: z.boolean().optional(),
    components: z.array(paramSchema).max(256).optional(),
    internalType: z.string().max(512).optional(),
  }),
);
const itemSchema = z.object({
  type: z.enum(["event", "function", "constructor", "error", "fallback", "receive"]),
  name: z.string().max(256).optional(),
  inputs: z.array(paramSchema).max(256).optional(),
  outputs: z.array(paramSchema).max(256).optional(),
  anonymous: z.boolean().optional(),
  stateMutability: z.string().max(32).optional(),
});

/** ParsedAbi is an ABI ready to decode with: events by topic0, anonymous events, functions by selector and name. */
export class ParsedAbi {
  readonly eventsByTopic = new Map<string, AbiEvent[]>();
  readonly anonymousEvents: AbiEvent[] = [];
  readonly functionsBySelector = new Map<string, AbiFunction>();
  readonly functionsByName = new Map<string, AbiFunction[]>();
  readonly functionsBySignature = new Map<string, AbiFunction>();
  readonly events: AbiEvent[] = [];
  /** Each event's canonical signature, computed once (a backfill decodes thousands of logs per ABI). */
  readonly signatures = new Map<AbiEvent, string>();

  constructor(items: readonly (AbiEvent | AbiFunction | { type: string })[]) {
    for (const item of items) {
      if (item.type === "event") {
        const e = item as AbiEvent;
        this.events.push(e);
        this.signatures.set(e, toEventSignature(e));
        if (e.anonymous) this.anonymousEvents.push(e);
        else push(this.eventsByTopic, toEventSelector(e), e);
      } else if (item.type === "function") {
        const f = item as AbiFunction;
        this.functionsBySelector.set(toFunctionSelector(f), f);
        push(this.functionsByName, f.name, f);
        this.functionsBySignature.set(toFunctionSignature(f), f);
      }
    }
  }

  /** topicsOf gives the topic0 of each named event (a name or a signature), or null when one of them is anonymous (no topic filter possible). */
  topicsOf(events: readonly string[] | null): string[] | null {
    const chosen = events === null ? this.events : events.flatMap((name) => this.eventsNamed(name));
    if (chosen.some((e) => e.anonymous)) return null;
    return [...new Set(chosen.map((e) => toEventSelector(e)))];
  }

  private eventsNamed(name: string): AbiEvent[] {
    const found = this.events.filter((e) => e.name === name || toEventSignature(e) === name.replace(/\s+/g, ""));
    if (found.length === 0) throw new AbiError("InvalidParams", `events: no event ${JSON.stringify(name)} in the ABI (have: ${this.events.map((e) => toEventSignature(e)).join(", ") || "none"})`);
    return found;
  }
}

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
}

function depth(p: ParamShape, d = 0): number {
  if (d > MAX_PARAM_DEPTH) return d;
  return Math.max(d, ...(p.components ?? []).map((c) => depth(c, d + 1)));
}

/**
 * parseAbiInput reads an ABI as user code sends it: a JSON ABI (a list of objects, as solc and
 * block explorers give it), human-readable lines (`"event Transfer(address indexed from, address
 * indexed to, uint256 value)"`), a list mixing both, or one such line as a string.
 */
export function parseAbiInput(abi: unknown): ParsedAbi {
  const list = typeof abi === "string" ? [abi] : abi;
  if (!Array.isArray(list)) throw new AbiError("InvalidAbi", "abi must be a list of ABI items (JSON objects or human-readable lines such as \"event Transfer(address indexed from, address indexed to, uint256 value)\")");
  if (list.length > MAX_ABI_ITEMS) throw new AbiError("InvalidAbi", `abi: at most ${MAX_ABI_ITEMS} items, got ${list.length}`);
  const items: (AbiEvent | AbiFunction | { type: string })[] = [];
  const lines: string[] = [];
  let chars = 0;
  list.forEach((item, i) => {
    if (typeof item === "string") {
      chars += item.length;
      lines.push(item);
      return;
    }
    const r = itemSchema.safeParse(item);
    if (!r.success) throw new AbiError("InvalidAbi", `abi[${i}]: ${z.prettifyError(r.error).replace(/\n/g, "; ")}`);
    const bad = [...(r.data.inputs ?? []), ...(r.data.outputs ?? [])].find((p) => depth(p) > MAX_PARAM_DEPTH);
    if (bad) throw new AbiError("InvalidAbi", `abi[${i}]: tuples nested deeper than ${MAX_PARAM_DEPTH}`);
    if ((r.data.type === "event" || r.data.type === "function") && !r.data.name) throw new AbiError("InvalidAbi", `abi[${i}]: a ${r.data.type} needs a name`);
    items.push({ ...r.data, inputs: r.data.inputs ?? [], ...(r.data.type === "function" ? { outputs: r.data.outputs ?? [], stateMutability: r.data.stateMutability ?? "nonpayable" } : {}) } as AbiEvent | AbiFunction);
  });
  if (chars > MAX_ABI_TEXT_CHARS) throw new AbiError("InvalidAbi", `abi: at most ${MAX_ABI_TEXT_CHARS} characters of text`);
  if (lines.length > 0) {
    try {
      items.push(...(parseAbi(lines) as readonly (AbiEvent | AbiFunction | { type: string })[]));
    } catch (e) {
      throw new AbiError("InvalidAbi", `abi: ${firstLine(e)}`);
    }
  }
  return new ParsedAbi(items);
}

function firstLine(e: unknown): string {
  const m = e instanceof Error ? ((e as { shortMessage?: string }).shortMessage ?? e.message) : String(e);
  return m.split("\n")[0]!;
}

const HEX = /^0x(?:[0-9a-fA-F]{2})*$/;
const TOPIC = /^0x[0-9a-fA-F]{64}$/;

function hexData(v: unknown, what: string): `0x${string}` {
  if (typeof v !== "string" || !HEX.test(v)) throw new AbiError("InvalidParams", `${what} must be 0x-prefixed hex of whole bytes`);
  if (v.length > MAX_HEX_CHARS) throw new AbiError("InvalidParams", `${what}: at most ${MAX_HEX_CHARS} hex characters`);
  return v as `0x${string}`;
}

/** A value decoded from ABI data: integers are bigint or number, bytes are hex, tuples are records or arrays. */
export type AbiValue = bigint | number | string | boolean | null | AbiValue[] | { [k: string]: AbiValue };

/** DecodedLog is one log's outcome: its event and arguments, or the reason it could not be decoded. */
export interface DecodedLog {
  readonly event: string | null;
  readonly signature: string | null;
  readonly address: string | null;
  readonly args: { [k: string]: AbiValue } | null;
  readonly blockNumber: number | null;
  readonly transactionHash: string | null;
  readonly transactionIndex: number | null;
  readonly logIndex: number | null;
  readonly error: string | null;
}

/** An indexed argument of a dynamic type (string, bytes, arrays, tuples) is only its Keccak-256 hash in the topics. */
function isDynamic(p: AbiParameter): boolean {
  return p.type === "string" || p.type === "bytes" || p.type.endsWith("]") || p.type.startsWith("tuple");
}

function argName(p: AbiParameter, i: number): string {
  return p.name ? p.name : `arg${i}`;
}

function quantity(v: unknown): number | null {
  if (typeof v === "number" && Number.isSafeInteger(v)) return v;
  if (typeof v === "string" && /^0x[0-9a-fA-F]{1,13}$/.test(v)) return parseInt(v, 16);
  return null;
}

/** decodeWith decodes a log as one event; it throws (a plain Error with the reason) when the log does not fit it. */
function decodeWith(e: AbiEvent, signature: string, topics: readonly `0x${string}`[], data: `0x${string}`): { [k: string]: AbiValue } {
  const indexed = e.inputs.filter((p) => p.indexed);
  const first = e.anonymous ? 0 : 1;
  if (topics.length !== first + indexed.length) throw new Error(`${signature} has ${indexed.length} indexed argument(s), so ${first + indexed.length} topics; the log has ${topics.length}`);
  const plain = e.inputs.filter((p) => !p.indexed);
  const plainValues = decodeAbiParameters(plain, data) as readonly AbiValue[];
  const args: { [k: string]: AbiValue } = {};
  let ti = first;
  let pi = 0;
  e.inputs.forEach((p, i) => {
    if (p.indexed) {
      const topic = topics[ti++]!;
      args[argName(p, i)] = isDynamic(p) ? topic.toLowerCase() : p.type === "address" && /^0x0{24}/.test(topic) ? checksumAddress(`0x${topic.slice(26)}`) : (decodeAbiParameters([p], topic)[0] as AbiValue);
    } else {
      args[argName(p, i)] = plainValues[pi++]!;
    }
  });
  return args;
}

/**
 * decodeLog matches one log (the JSON-RPC shape: address, topics, data, and optionally
 * blockNumber, transactionHash, transactionIndex, logIndex) to an event of the ABI and decodes
 * it. Candidates are the events with the log's topic0, then the anonymous events; the first that
 * fits wins. A log no event fits comes back with `error` set: one bad log never fails the others.
 */
export function decodeLog(abi: ParsedAbi, log: unknown): DecodedLog {
  const l = (log !== null && typeof log === "object" && !Array.isArray(log) ? log : {}) as Record<string, unknown>;
  const address = typeof l.address === "string" && /^0x[0-9a-fA-F]{40}$/.test(l.address) ? checksumAddress(l.address as `0x${string}`) : null;
  const base = {
    blockNumber: quantity(l.blockNumber),
    transactionHash: typeof l.transactionHash === "string" ? l.transactionHash : null,
    transactionIndex: quantity(l.transactionIndex),
    logIndex: quantity(l.logIndex),
  };
  const fail = (error: string): DecodedLog => ({ event: null, signature: null, address, args: null, ...base, error });
  const topics = l.topics;
  if (!Array.isArray(topics) || topics.length > 4 || !topics.every((t) => typeof t === "string" && TOPIC.test(t))) return fail("topics must be a list of at most 4 32-byte 0x hashes");
  if (typeof l.data !== "string" || !HEX.test(l.data) || l.data.length > MAX_HEX_CHARS) return fail("data must be 0x-prefixed hex of whole bytes");
  const t = topics as `0x${string}`[];
  const byTopic = t.length > 0 ? (abi.eventsByTopic.get(t[0]!.toLowerCase()) ?? []) : [];
  const candidates = [...byTopic, ...abi.anonymousEvents];
  if (candidates.length === 0) return fail(t.length === 0 ? "the log has no topics and the ABI has no anonymous event" : `no event of the ABI has topic0 ${t[0]!.toLowerCase()}`);
  const reasons: string[] = [];
  for (const e of candidates) {
    const signature = abi.signatures.get(e)!;
    try {
      return { event: e.name, signature, address, args: decodeWith(e, signature, t, l.data as `0x${string}`), ...base, error: null };
    } catch (err) {
      reasons.push(`${signature}${e.anonymous ? " (anonymous)" : ""}: ${firstLine(err)}`);
    }
  }
  return fail(byTopic.length === 0 ? `no event of the ABI has topic0 ${t[0]?.toLowerCase() ?? "(none)"}; ${reasons.join("; ")}` : reasons.join("; "));
}

/** decodeLogs decodes each log on its own (see decodeLog); at most MAX_LOGS_PER_REQUEST. */
export function decodeLogs(abi: ParsedAbi, logs: unknown): DecodedLog[] {
  if (!Array.isArray(logs)) throw new AbiError("InvalidParams", "logs must be a list of logs (as ctx.blockdb.logs or a receipt's logs give them)");
  if (logs.length > MAX_LOGS_PER_REQUEST) throw new AbiError("InvalidParams", `logs: at most ${MAX_LOGS_PER_REQUEST} per request, got ${logs.length}`);
  return logs.map((l) => decodeLog(abi, l));
}

/** DecodedCall is a transaction input decoded by the function its selector names. */
export interface DecodedCall {
  readonly function: string;
  readonly signature: string;
  readonly selector: string;
  readonly args: { [k: string]: AbiValue };
}

/** decodeCall decodes a transaction's input (selector + arguments); an unknown selector or bad data is a DecodeFailed error. */
export function decodeCall(abi: ParsedAbi, input: unknown): DecodedCall {
  const data = hexData(input, "input");
  if (data.length < 10) throw new AbiError("DecodeFailed", `input has ${(data.length - 2) / 2} bytes: no 4-byte function selector`);
  const selector = data.slice(0, 10).toLowerCase();
  const f = abi.functionsBySelector.get(selector);
  if (!f) throw new AbiError("DecodeFailed", `no function of the ABI has selector ${selector}`);
  let values: readonly AbiValue[];
  try {
    values = decodeAbiParameters(f.inputs, `0x${data.slice(10)}`) as readonly AbiValue[];
  } catch (e) {
    throw new AbiError("DecodeFailed", `${toFunctionSignature(f)}: ${firstLine(e)}`);
  }
  const args: { [k: string]: AbiValue } = {};
  f.inputs.forEach((p, i) => (args[argName(p, i)] = values[i]!));
  return { function: f.name, signature: toFunctionSignature(f), selector, args };
}

/**
 * decodeResult decodes what an `eth_call` of function `fn` (a name, or a signature when the name
 * is overloaded) returned: one output is its value, several are a record by name (a list when
 * any is unnamed), none is null.
 */
export function decodeResult(abi: ParsedAbi, fn: unknown, output: unknown): AbiValue {
  if (typeof fn !== "string" || fn === "") throw new AbiError("InvalidParams", "function must be a function name or signature");
  const bySig = abi.functionsBySignature.get(fn.replace(/\s+/g, ""));
  const byName = abi.functionsByName.get(fn) ?? [];
  const f = bySig ?? (byName.length === 1 ? byName[0] : undefined);
  if (!f) {
    if (byName.length > 1) throw new AbiError("InvalidParams", `function ${fn} is overloaded; name one of ${byName.map((x) => toFunctionSignature(x)).join(", ")}`);
    throw new AbiError("InvalidParams", `no function ${JSON.stringify(fn)} in the ABI`);
  }
  const data = hexData(output, "output");
  let values: readonly AbiValue[];
  try {
    values = decodeAbiParameters(f.outputs, data) as readonly AbiValue[];
  } catch (e) {
    throw new AbiError("DecodeFailed", `${toFunctionSignature(f)} output: ${firstLine(e)}`);
  }
  if (f.outputs.length === 0) return null;
  if (f.outputs.length === 1) return values[0]!;
  if (f.outputs.every((p) => p.name)) return Object.fromEntries(f.outputs.map((p, i) => [p.name!, values[i]!]));
  return [...values];
}

function signatureText(text: unknown, what: string): string {
  if (typeof text !== "string" || text.trim() === "" || text.length > 10_000) throw new AbiError("InvalidParams", `${what}: text must be a signature such as "Transfer(address,address,uint256)"`);
  return text.trim();
}

/** eventSignature is the Keccak-256 topic0 of an event signature ("Transfer(address,address,uint256)" or "event Transfer(address indexed from, ...)"). */
export function eventSignature(text: unknown): string {
  const s = signatureText(text, "eventSignature");
  try {
    return toEventSelector(s);
  } catch (e) {
    throw new AbiError("InvalidParams", `eventSignature: ${firstLine(e)}`);
  }
}

/** functionSelector is the first 4 bytes of the Keccak-256 of a function signature ("transfer(address,uint256)"). */
export function functionSelector(text: unknown): string {
  const s = signatureText(text, "functionSelector");
  try {
    return toFunctionSelector(s);
  } catch (e) {
    throw new AbiError("InvalidParams", `functionSelector: ${firstLine(e)}`);
  }
}

/**
 * toJsonText writes a decoded value as JSON text with every integer exact: a bigint is written as
 * its decimal digits (JSON has no size limit on numbers; Python's json reads them as exact ints),
 * where JSON.stringify would throw and a Number would round past 2^53.
 */
export function toJsonText(v: unknown): string {
  switch (typeof v) {
    case "bigint":
      return v.toString();
    case "number":
      return Number.isFinite(v) ? String(v) : "null";
    case "string":
      return JSON.stringify(v);
    case "boolean":
      return v ? "true" : "false";
    case "undefined":
      return "null";
  }
  if (v === null) return "null";
  if (Array.isArray(v)) return `[${v.map(toJsonText).join(",")}]`;
  let out = "{";
  let first = true;
  for (const [k, x] of Object.entries(v as object)) {
    out += `${first ? "" : ","}${JSON.stringify(k)}:${toJsonText(x)}`;
    first = false;
  }
  return `${out}}`;
}
