import { RawJson, type JsonValue } from "../../json/raw-json";
import {
  AbiError,
  decodeCall,
  decodeLogs,
  decodeResult,
  eventSignature,
  functionSelector,
  parseAbiInput,
  toJsonText,
  type ParsedAbi,
} from "../../chains/abi/abi-codec";
import { BlockReader } from "../../chains/blockdb/block-reader";
import type { ChainRouter } from "../../chains/router/chain-router";
import { type Backend, type BackendOp, type CacheDeclaration } from "./backend-registry";
import { BackendError } from "../../backend-error";
import { blockNumberParam, chainParam, paramsObject, type Params } from "./backend-params";

/** Parsed ABIs kept by the digest of their JSON text: a backfill sends the same ABI with every call. */
const ABI_CACHE_ENTRIES = 256;

function digest(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}

function fieldOf(p: Params, name: string, op: string): JsonValue {
  const v = p[name];
  if (v === undefined) throw new BackendError("InvalidParams", `${op}: ${name} is required`);
  return v;
}

function eventsParam(p: Params): string[] | null {
  const v = p.events;
  if (v === undefined || v === null) return null;
  const list = typeof v === "string" ? [v] : v;
  if (!Array.isArray(list) || list.length > 1000 || !list.every((x) => typeof x === "string" && x !== "")) {
    throw new BackendError("InvalidParams", "logsOf: events must be a list of event names or signatures");
  }
  return list as string[];
}

function addressParam(p: Params): string[] {
  const v = p.address ?? [];
  const list = Array.isArray(v) ? v : [v];
  if (list.length > 1000) throw new BackendError("InvalidParams", "logsOf: at most 1000 addresses");
  return list.map((a) => {
    if (typeof a !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(a)) throw new BackendError("InvalidParams", `logsOf: address must be a 0x address or a list of them, got ${JSON.stringify(a)}`);
    return a.toLowerCase();
  });
}

/** A pure op: its answer depends on its params alone, so it is cached at once by their digest. */
function pure(handle: (p: Params) => unknown, op: string): BackendOp {
  return {
    kind: "read",
    handle: (params) => new RawJson(toJsonText(handle(paramsObject(params, op)))),
    cache: (params): CacheDeclaration => ({ key: digest(JSON.stringify(params)), pure: true }),
  };
}

/**
 * logicalTypesBackend decodes chain data by a contract ABI: the "logical types" of logs, calls and
 * results. Ops (every one a read):
 * - `decodeLogs {abi, logs}` -> one entry per log: {event, signature, address (EIP-55), args,
 *   blockNumber, transactionHash, transactionIndex, logIndex, error}; a log no event of the ABI
 *   fits has `event: null` and `error` saying why (one bad log never fails the request);
 * - `logsOf {chain, fromBlock, toBlock, abi, events?, address?}` reads the logs of the range
 *   (through the chain's source, as `blockdb.logs`, filtered on the events' topic0s) and decodes
 *   them in one request;
 * - `decodeCall {abi, input}` -> {function, signature, selector, args};
 * - `decodeResult {abi, function, output}` -> the decoded return value(s) of an eth_call;
 * - `eventSignature {text}` / `functionSelector {text}` -> Keccak-256 topic0 / 4-byte selector.
 * Integers arrive in Python as exact ints (the answer is JSON text with bigints as digits).
 * `logsOf` is cached like blockdb's numbered reads (final below the finality depth); the other
 * ops are pure and cached by the digest of their params.
 */
export function logicalTypesBackend(router: ChainRouter): Backend {
  const reader = new BlockReader(router);
  const abis = new Map<string, ParsedAbi>();
  const abiOf = (p: Params, op: string): ParsedAbi => {
    const raw = fieldOf(p, "abi", op);
    const key = digest(JSON.stringify(raw));
    let parsed = abis.get(key);
    if (parsed) {
      abis.delete(key);
      abis.set(key, parsed); // most recently used last
      return parsed;
    }
    parsed = wrap(op, () => parseAbiInput(raw));
    if (abis.size >= ABI_CACHE_ENTRIES) abis.delete(abis.keys().next().value!);
    abis.set(key, parsed);
    return parsed;
  };
  const range = (p: Params) => ({ fromBlock: blockNumberParam(p, "fromBlock", "logsOf"), toBlock: blockNumberParam(p, "toBlock", "logsOf") });
  return {
    name: "logicalTypes",
    head: (chain) => reader.head(chain),
    finalityDepth: (chain) => router.route(chain).finalityDepth,
    ops: {
      decodeLogs: pure((p) => {
        const abi = abiOf(p, "decodeLogs");
        return wrap("decodeLogs", () => decodeLogs(abi, fieldOf(p, "logs", "decodeLogs")));
      }, "decodeLogs"),
      decodeCall: pure((p) => {
        const abi = abiOf(p, "decodeCall");
        return wrap("decodeCall", () => decodeCall(abi, fieldOf(p, "input", "decodeCall")));
      }, "decodeCall"),
      decodeResult: pure((p) => {
        const abi = abiOf(p, "decodeResult");
        return wrap("decodeResult", () => decodeResult(abi, fieldOf(p, "function", "decodeResult"), fieldOf(p, "output", "decodeResult")));
      }, "decodeResult"),
      eventSignature: pure((p) => wrap("eventSignature", () => eventSignature(p.text)), "eventSignature"),
      functionSelector: pure((p) => wrap("functionSelector", () => functionSelector(p.text)), "functionSelector"),
      logsOf: {
        kind: "read",
        handle: async (params) => {
          const p = paramsObject(params, "logsOf");
          const chain = chainParam(p, "logsOf");
          const abi = abiOf(p, "logsOf");
          const topics = wrap("logsOf", () => abi.topicsOf(eventsParam(p)));
          if (topics !== null && topics.length === 0) return new RawJson("[]");
          const logs = await reader.logs(chain, { ...range(p), address: addressParam(p), topics: topics === null ? [] : [topics] });
          return new RawJson(toJsonText(wrap("logsOf", () => decodeLogs(abi, logs))));
        },
        cache: (params) => {
          const p = paramsObject(params, "logsOf");
          const chain = chainParam(p, "logsOf");
          const r = range(p);
          const rest = { abi: p.abi ?? null, events: eventsParam(p), address: [...addressParam(p)].sort() };
          return { key: `${chain}:${r.fromBlock}:${r.toBlock}:${digest(JSON.stringify(rest))}`, chain, block: r.toBlock };
        },
      },
    },
  };
}

/** wrap turns the codec's AbiError into the BackendError user code sees (same type name). */
function wrap<T>(op: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof AbiError) throw new BackendError(e.code, `${op}: ${e.message}`);
    throw e;
  }
}
