import * as grpc from "@grpc/grpc-js";
import { BlockxProcess } from "./blockx-process";
import { WorkerClient } from "./worker-client";
import { randomLanePrefix } from "./worker-double";

/**
 * startWorker runs the compiled block Worker on a random port and lane of the shared etcd, with one
 * executor unless `env` says otherwise, and a client of it; `cleanups` gets what stops both.
 */
export async function startWorker(env: Record<string, string>, cleanups: (() => Promise<unknown> | unknown)[]): Promise<{ client: WorkerClient; process: BlockxProcess }> {
  const p = BlockxProcess.spawn(["worker"], {
    ETCD_ENDPOINTS: process.env.BLOCKX_TEST_ETCD_ENDPOINT!,
    WORKER_LISTEN: "127.0.0.1:0",
    WORKER_REGISTRY_PREFIX: randomLanePrefix("block"),
    EXECUTOR_COUNT: "1",
    BLOCKX_LOG_LEVEL: "info",
    ...env,
  });
  cleanups.push(() => p.stop("SIGKILL"));
  const addr = await p.grpcAddr();
  // A plaintext Worker (BLOCKX_INSECURE=1 in env) gets a plaintext client; else the suite's mTLS one.
  const client = env.BLOCKX_INSECURE === "1" ? new WorkerClient(addr, { credentials: grpc.credentials.createInsecure(), options: {} }) : new WorkerClient(addr);
  cleanups.push(() => client.close());
  return { client, process: p };
}
