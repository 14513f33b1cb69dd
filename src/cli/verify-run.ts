import type { ChainsConfig } from "../common/config/chains-config";
import { openTableStore } from "../outputs/stores/open-table-store";
import { TableStoreError, type TableStore } from "../outputs/stores/table-store";
import { describeFinding, TableVerification, withLedgerScopes, type VerifyFinding } from "../outputs/table-verification";
import { scopeLedgerName } from "../outputs/stores/table-schema";
import { BackendError } from "../runtime/backend-error";
import type { BlockHeader } from "../runtime/chains/blockdb/answer-checks";
import { BlockReader } from "../runtime/chains/blockdb/block-reader";
import { LocalTestChain } from "../runtime/chains/localtestservice/local-test-chain";
import { ChainRouter } from "../runtime/chains/router/chain-router";
import { EXIT } from "./client/exit-codes";
import type { VerifyConfig } from "./verify-command";

export interface VerifyRequest {
  readonly table: string;
  readonly chain: string;
  readonly range: { fromBlock: number; toBlock: number } | undefined;
  readonly json: boolean;
  readonly config: VerifyConfig;
  readonly chains: ChainsConfig;
}

/** VerifyFailed: the store or the chain could not be read (exit 3), or the table cannot be verified (exit 2). */
class VerifyFailed extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/**
 * runVerify reads the table's scopes and the chain's headers window by window and prints what
 * TableVerification found; the exit code: 0 clean, 1 findings, 2 a table that cannot be verified,
 * 3 a store or node that could not be read.
 */
export async function runVerify(r: VerifyRequest): Promise<number> {
  const c = r.config;
  const local = c.localTestChainEnabled === "true" || Object.values(r.chains.chains ?? {}).some((x) => x.source === "localtestservice") ? new LocalTestChain({ head: c.localTestChainHead }) : null;
  const router = new ChainRouter(r.chains, { localTestChain: local, rpcMaxAnswerBytes: c.rpcMaxAnswerBytes });
  const store = openTableStore(c, { inline: true });
  const started = performance.now();
  try {
    const report = await verify(r, store, router);
    const seconds = (performance.now() - started) / 1000;
    print(r, report, seconds);
    return report.verification.clean ? EXIT.OK : EXIT.TASK_FAILED;
  } catch (e) {
    if (e instanceof VerifyFailed) {
      console.error(`blockx verify: ${e.message}`);
      return e.exitCode;
    }
    throw e;
  } finally {
    local?.close();
    await store.close();
  }
}

interface Report {
  readonly verification: TableVerification;
  readonly findings: VerifyFinding[];
  readonly fromBlock: number;
  readonly toBlock: number;
  readonly empty: boolean;
  /** Scopes the ledger records with no rows (counted among the scopes). */
  readonly emptyScopes?: number;
}

async function verify(r: VerifyRequest, store: TableStore, router: ChainRouter): Promise<Report> {
  const reader = new BlockReader(router);
  const storeCall = async <T>(f: () => Promise<T>): Promise<T> => {
    try {
      return await f();
    } catch (e) {
      if (e instanceof TableStoreError) throw new VerifyFailed(`table store: ${e.message}`, e.code === "STORE_UNAVAILABLE" ? EXIT.UNREACHABLE : EXIT.USAGE);
      throw e;
    }
  };
  const chainCall = async <T>(f: () => Promise<T>): Promise<T> => {
    try {
      return await f();
    } catch (e) {
      if (e instanceof BackendError) throw new VerifyFailed(`chain ${r.chain}: ${e.type}: ${e.message}`, e.type === "UnknownChain" || e.type === "ChainIdMismatch" ? EXIT.USAGE : EXIT.UNREACHABLE);
      throw e;
    }
  };
  await chainCall(async () => router.route(r.chain)); // a chain CHAINS_CONFIG does not name is a usage error, table or not
  // The table's scope ledger (written with every commit since it exists) records scopes whose
  // function returned no rows: those blocks are written, not missing. A table whose every call
  // returned nothing exists only as its ledger.
  const ledger = scopeLedgerName(r.table);
  const absentIsNull = async <T>(f: () => Promise<T>): Promise<T | "absent"> => {
    try {
      return await f();
    } catch (e) {
      if (e instanceof TableStoreError && e.code === "NO_SUCH_TABLE") return "absent";
      return storeCall(() => Promise.reject(e));
    }
  };
  const tableBounds = await absentIsNull(() => store.scopeBounds(r.table, r.chain));
  const ledgerBounds = await absentIsNull(() => store.scopeBounds(ledger, r.chain));
  if (tableBounds === "absent" && ledgerBounds === "absent") await storeCall(() => store.scopeCounts(r.table, r.chain, 0, 0)); // no such table: fails here, not as "empty"
  const known = [tableBounds, ledgerBounds].filter((b): b is { fromBlock: number; toBlock: number } => b !== null && b !== "absent");
  const bounds = r.range ?? (known.length === 0 ? null : { fromBlock: Math.min(...known.map((b) => b.fromBlock)), toBlock: Math.max(...known.map((b) => b.toBlock)) });
  if (bounds === null) return { verification: new TableVerification(0, -1), findings: [], fromBlock: 0, toBlock: -1, empty: true };
  const v = new TableVerification(bounds.fromBlock, bounds.toBlock);
  const findings: VerifyFinding[] = [];
  const linked = router.source(r.chain).linkedParents !== false;
  const window = r.config.verifyWindowBlocks;
  // A scope that starts before the range and reaches into it covers its first blocks.
  const before = tableBounds === "absent" ? [] : await storeCall(() => store.wideScopes(r.table, r.chain, bounds.fromBlock, bounds.fromBlock, 16));
  let from = Math.min(bounds.fromBlock, ...before.map((s) => s.fromBlock));
  let last: BlockHeader | undefined;
  let emptyScopes = 0;
  for (; from <= bounds.toBlock; from += window) {
    const to = Math.min(from + window - 1, bounds.toBlock);
    const [own, recorded, headers] = await Promise.all([
      tableBounds === "absent" ? [] : storeCall(() => store.scopeCounts(r.table, r.chain, from, to)),
      ledgerBounds === "absent" ? [] : storeCall(() => store.scopeCounts(ledger, r.chain, from, to)),
      chainCall(() => reader.headers(r.chain, from, to)),
    ]);
    const { scopes, empty } = withLedgerScopes(own, recorded);
    emptyScopes += empty;
    if (linked && last !== undefined && headers[0]!.parentHash !== last.hash) {
      throw new VerifyFailed(`chain ${r.chain}: block ${from}'s parent is ${headers[0]!.parentHash}, but block ${last.number} was ${last.hash}: the chain reorganised while verify read it; run it again`, EXIT.UNREACHABLE);
    }
    last = headers[headers.length - 1];
    const hashes = new Map(headers.map((h) => [h.number, h.hash]));
    // Scopes reaching past the window: their last block's hash, asked on its own.
    const beyond = [...new Set(scopes.map((s) => s.toBlock).filter((n) => !hashes.has(n)))];
    const extra = await Promise.all(beyond.map((n) => chainCall(() => reader.headers(r.chain, n, n))));
    for (const [h] of extra) hashes.set(h!.number, h!.hash);
    findings.push(...v.add(scopes, (n) => hashes.get(n)));
  }
  findings.push(...v.finish());
  return { verification: v, findings, fromBlock: bounds.fromBlock, toBlock: bounds.toBlock, empty: false, emptyScopes };
}

function print(r: VerifyRequest, report: Report, seconds: number): void {
  const t = report.verification.tally;
  if (r.json) {
    console.log(JSON.stringify({ table: r.table, chain: r.chain, fromBlock: report.fromBlock, toBlock: report.toBlock, clean: report.verification.clean, ...t, emptyScopes: report.emptyScopes ?? 0, seconds: Number(seconds.toFixed(3)), findings: report.findings }));
    return;
  }
  if (report.empty) {
    console.log(`table ${r.table} holds no rows of chain ${r.chain}: nothing to verify (give --blocks A..B to check a range for missing blocks)`);
    return;
  }
  const max = r.config.verifyMaxPrinted;
  const shown = new Map<string, number>();
  for (const f of report.findings) {
    const n = (shown.get(f.kind) ?? 0) + 1;
    shown.set(f.kind, n);
    if (n <= max) console.log(describeFinding(f));
  }
  for (const [kind, n] of shown) if (n > max) console.log(`${kind}: ${n - max} more not printed (VERIFY_MAX_PRINTED=${max})`);
  if (t.unhashed > 0) console.log(`unhashed: ${t.unhashed} scope(s) record no block hash (written before hashes were recorded, or on a chain the Worker could not reach): not compared`);
  const blocks = report.toBlock - report.fromBlock + 1;
  const empties = report.emptyScopes ? ` (${report.emptyScopes} with no rows, in the scope ledger)` : "";
  const summary = `${r.table} on ${r.chain}, blocks ${report.fromBlock}..${report.toBlock}: ${blocks} blocks, ${t.scopes} scopes${empties}, ${t.rows} rows in ${seconds.toFixed(2)} s`;
  if (report.verification.clean) console.log(`verified ${summary}: nothing missing, stale or doubled`);
  else console.log(`FAILED ${summary}: ${t.missingBlocks} block(s) missing, ${t.staleScopes} stale scope(s), ${t.doubledScopes} doubled scope(s)`);
}
