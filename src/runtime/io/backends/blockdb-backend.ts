import { RawJson, type JsonValue } from "../../json/raw-json";
import { BlockReader, type LogQuery } from "../../chains/blockdb/block-reader";
import type { ChainRouter } from "../../chains/router/chain-router";
import { type Backend, type CacheDeclaration } from "./backend-registry";
import { BackendError } from "../../backend-error";
import { blockNumberParam, blockRefParam, chainParam, paramsObject, type Params } from "./backend-params";

const HASH = /^0x[0-9a-f]{64}$/;
const ADDRESS = /^0x[0-9a-f]{40}$/;

function addressParam(p: Params): string[] {
  const raw = p.address ?? [];
  const list = Array.isArray(raw) ? raw : [raw];
  return list.map((a) => {
    const s = typeof a === "string" ? a.toLowerCase() : "";
    if (!ADDRESS.test(s)) throw new BackendError("InvalidParams", `logs: address must be a 0x address or a list of them, got ${JSON.stringify(a)}`);
    return s;
  });
}

function topicsParam(p: Params): (string[] | null)[] {
  const raw = p.topics ?? [];
  if (!Array.isArray(raw) || raw.length > 4) throw new BackendError("InvalidParams", `logs: topics must be a list of at most 4 positions, got ${JSON.stringify(raw)}`);
  return raw.map((t, i) => {
    if (t === null) return null;
    const list = Array.isArray(t) ? t : [t];
    if (list.length === 0) return null;
    return list.map((x) => {
      const s = typeof x === "string" ? x.toLowerCase() : "";
      if (!HASH.test(s)) throw new BackendError("InvalidParams", `logs: topics[${i}] must be a 32-byte 0x hash, a list of them or null, got ${JSON.stringify(x)}`);
      return s;
    });
  });
}

function logQuery(p: Params): LogQuery {
  return { fromBlock: blockNumberParam(p, "fromBlock", "logs"), toBlock: blockNumberParam(p, "toBlock", "logs"), address: addressParam(p), topics: topicsParam(p) };
}

function raw(v: JsonValue): RawJson {
  return new RawJson(JSON.stringify(v));
}

/** A descriptor for a request about one numbered block; tags (latest, ...) are never cached. */
function numbered(op: string, params: JsonValue, extra: (p: Params) => string = () => ""): CacheDeclaration | null {
  const p = paramsObject(params, op);
  const chain = chainParam(p, op);
  const ref = blockRefParam(p, "number", op);
  return typeof ref === "number" ? { key: `blockdb.${op}:${chain}:${ref}${extra(p)}`, chain, block: ref } : null;
}

/**
 * blockdbBackend reads blocks, receipts and logs of any chain the router knows, in the Ethereum
 * JSON-RPC shape (hex quantities, lowercase hex), whether the chain is a node or the local test
 * chain. Ops: block {chain, number, full=true}, receipts {chain, number}, logs {chain,
 * fromBlock, toBlock, address?, topics?}, headers {chain, fromBlock, toBlock} (number, hash,
 * parentHash of each, parent links checked), head {chain}. A number is an integer, 0x hex or a tag
 * (latest, finalized, safe, earliest, pending). Answers are checked (answer-checks.ts): a block
 * the node does not have (past its head) is a retryable BlockUnavailable, never null; an answer
 * about another block a retryable NodeAnswerMismatch. Numbered blocks, receipts, logs and headers
 * are cacheable (immutable below the finality depth); tags and head never are.
 */
export function blockdbBackend(router: ChainRouter): Backend {
  const reader = new BlockReader(router);
  return {
    name: "blockdb",
    head: (chain) => reader.head(chain),
    finalityDepth: (chain) => router.route(chain).finalityDepth,
    ops: {
      block: {
        kind: "read",
        handle: async (params) => {
          const p = paramsObject(params, "block");
          return raw(await reader.block(chainParam(p, "block"), blockRefParam(p, "number", "block"), p.full !== false));
        },
        cache: (params) => numbered("block", params, (p) => (p.full === false ? ":hashes" : ":full")),
      },
      receipts: {
        kind: "read",
        handle: async (params) => {
          const p = paramsObject(params, "receipts");
          return raw(await reader.receipts(chainParam(p, "receipts"), blockRefParam(p, "number", "receipts")));
        },
        cache: (params) => numbered("receipts", params),
      },
      logs: {
        kind: "read",
        handle: async (params) => {
          const p = paramsObject(params, "logs");
          return raw(await reader.logs(chainParam(p, "logs"), logQuery(p)));
        },
        cache: (params) => {
          const p = paramsObject(params, "logs");
          const chain = chainParam(p, "logs");
          const q = logQuery(p);
          const canonical = { fromBlock: q.fromBlock, toBlock: q.toBlock, address: [...q.address].sort(), topics: q.topics.map((t) => (t === null ? null : [...t].sort())) };
          return { key: `blockdb.logs:${chain}:${JSON.stringify(canonical)}`, chain, block: q.toBlock };
        },
      },
      headers: {
        kind: "read",
        handle: async (params) => {
          const p = paramsObject(params, "headers");
          return raw((await reader.headers(chainParam(p, "headers"), blockNumberParam(p, "fromBlock", "headers"), blockNumberParam(p, "toBlock", "headers"))) as unknown as JsonValue);
        },
        cache: (params) => {
          const p = paramsObject(params, "headers");
          const chain = chainParam(p, "headers");
          const from = blockNumberParam(p, "fromBlock", "headers");
          const to = blockNumberParam(p, "toBlock", "headers");
          return { key: `blockdb.headers:${chain}:${from}:${to}`, chain, block: to };
        },
      },
      head: {
        kind: "read",
        handle: async (params) => reader.head(chainParam(paramsObject(params, "head"), "head")),
      },
    },
  };
}
