import type { ChainsConfig } from "../../common/config/chains-config";
import { compileEtcdAccess } from "../../common/etcd/etcd-access";
import { createEtcdClient } from "../../common/etcd/etcd-client";
import { sdNotify } from "../../common/lifecycle/sd-notify";
import { onShutdownSignal } from "../../common/lifecycle/shutdown";
import { createLogger } from "../../common/logging/logger";
import type { FunctionRef } from "../../gen/worker/v1/worker";
import { openTableStore } from "../../outputs/stores/open-table-store";
import { BlockReader } from "../../runtime/chains/blockdb/block-reader";
import { LocalTestChain } from "../../runtime/chains/localtestservice/local-test-chain";
import { ChainRouter } from "../../runtime/chains/router/chain-router";
import { BlockxClient } from "../../sdk/blockx-client";
import { EXIT } from "../../cli/client/exit-codes";
import { FollowLedger } from "../adapters/follow-ledger";
import { FollowRunner } from "../adapters/follow-runner";
import { FollowerStatusPublisher } from "../adapters/follower-status-publisher";
import type { FollowConfig } from "./follow-command";

export interface FollowRequest {
  readonly table: string;
  readonly chain: string;
  readonly fn: FunctionRef;
  readonly from: number | undefined;
  readonly config: FollowConfig;
  readonly chains: ChainsConfig;
  readonly owner: string;
}

/**
 * runFollow wires the follower: the table store (its ledger is the position), the chain through the
 * checked block reader, the SDK for the tasks, etcd for the status; runs until a signal (exit 0)
 * or a reorganisation deeper than the finality depth (exit 1). A chain CHAINS_CONFIG does not name,
 * or a table with nothing written and no --from, is a usage error (2); a store that cannot be read
 * at start, 3.
 */
export async function runFollow(r: FollowRequest): Promise<number> {
  const c = r.config;
  const log = createLogger(c.logLevel, { role: "follow", table: r.table, chain: r.chain });
  const local = c.localTestChainEnabled === "true" || Object.values(r.chains.chains ?? {}).some((x) => x.source === "localtestservice") ? new LocalTestChain({ head: c.localTestChainHead }) : null;
  const router = new ChainRouter(r.chains, { localTestChain: local, rpcMaxAnswerBytes: c.rpcMaxAnswerBytes });
  let route;
  try {
    route = router.route(r.chain);
  } catch (e) {
    console.error(`blockx follow: --chain ${r.chain}: ${(e as Error).message}`);
    return EXIT.USAGE;
  }
  const finalityDepth = c.followFinalityDepth ?? Math.min(5000, route.finalityDepth ?? c.ioFinalityDepth);
  const store = openTableStore(c, { inline: true });
  const ledger = new FollowLedger(store, r.table, r.chain);
  const client = new BlockxClient(c);
  const etcd = await createEtcdClient({ endpoints: c.etcdEndpoints, dialTimeoutMs: c.rpcTimeoutMs, access: compileEtcdAccess(c, c.etcdEndpoints) });
  const publisher = new FollowerStatusPublisher(etcd, r.table, r.chain, log);
  const close = async () => {
    await publisher.close().catch(() => {});
    etcd.close();
    client.close();
    local?.close();
    await store.close();
  };
  let runner: FollowRunner;
  try {
    const bounds = await ledger.bounds();
    if (bounds === null && r.from === undefined) {
      console.error(`blockx follow: table ${r.table} holds no block of chain ${r.chain} (its scope ledger ${ledger.ledger} is empty): give --from BLOCK to start`);
      await close();
      return EXIT.USAGE;
    }
    if (bounds !== null && r.from !== undefined && r.from !== bounds.toBlock + 1) {
      log.warn({ component: "follow", from: r.from, position: bounds.toBlock }, `--from ${r.from} ignored: the table's ledger holds blocks up to ${bounds.toBlock}, and the follower resumes after them`);
    }
    runner = await FollowRunner.open({
      table: r.table,
      chain: r.chain,
      fn: r.fn,
      // Resuming, the first block is the ledger's first (a reorganisation below it cannot be followed).
      opts: { startBlock: bounds?.fromBlock ?? r.from!, confirmations: c.followConfirmations, maxRangeBlocks: c.followMaxRangeBlocks, finalityDepth, retryMs: c.followRetryMs, cannotReorganise: route.source.kind === "localtestservice" },
      pollMs: c.followPollMs,
      client,
      reader: new BlockReader(router),
      ledger,
      publish: (s) => void publisher.publish(s),
      owner: r.owner,
      log,
    });
  } catch (e) {
    console.error(`blockx follow: reading the table's ledger in ${store.description}: ${(e as Error).message}`);
    await close();
    return EXIT.UNREACHABLE;
  }
  if (c.insecure === "1") {
    // A Worker shares warm executors between the tasks of one identity; an anonymous caller's
    // tasks are each their own owner (EXECUTOR_OWNER_WITHOUT_IDENTITY=task, the default).
    log.warn(
      { component: "follow" },
      "plaintext (BLOCKX_INSECURE=1): every task of the follower is its own executor owner on the Workers, so each block pays an executor's start (100-200 ms) " +
        "and the follower lags a block or two more; under mTLS (a client certificate), or with the Workers' EXECUTOR_OWNER_WITHOUT_IDENTITY=shared, its tasks reuse warm executors",
    );
  }
  log.info({ component: "follow", finalityDepth, confirmations: c.followConfirmations, maxRangeBlocks: c.followMaxRangeBlocks, pollMs: c.followPollMs, store: store.description }, "following");
  onShutdownSignal(log, 30_000, async () => {
    await runner.stop();
    await close();
  });
  sdNotify("READY=1");
  const stopped = await runner.run();
  if (stopped === null) return EXIT.OK; // a signal: onShutdownSignal exits
  console.error(`blockx follow: stopped: ${stopped}`);
  await close();
  return EXIT.TASK_FAILED;
}
