/**
 * bench/security/tls-cost.ts: what mTLS costs. Two clusters in the same run, each a real
 * Coordinator and Worker (compiled binary) of their own lane: one with certificates from a private
 * CA (mTLS, identities checked), one with BLOCKX_INSECURE=1 (the baseline). Interleaved rounds, each
 * measuring both: ReserveWorkerSlot p50 on a kept channel, and a tiny task (one input, `return x+1`,
 * return value) end to end through the SDK (reserve, submit, watch, result): serial p50 and
 * throughput at 8 in flight. Prints the medians over rounds and TLS/plaintext ratios.
 *
 *   bun bench/security/tls-cost.ts [--rounds 5] [--reserves 200] [--tasks 60] [--seconds 4]
 */
import * as grpc from "@grpc/grpc-js";
import { parseArgs } from "node:util";
import { channelFor } from "../../src/common/tls/grpc-tls";
import { compileTlsSetting, type TlsSetting } from "../../src/common/tls/tls-setting";
import { CoordinatorServiceClient } from "../../src/gen/coordinator/v1/coordinator";
import { BlockxClient } from "../../src/sdk/blockx-client";
import { TestCluster } from "../../test/support/cluster";
import { EtcdProcess } from "../../test/support/etcd";
import { TestCa } from "../../test/support/test-ca";
import { inputsTask } from "../../test/support/worker-client";
import { latency, throughput } from "../support/measure";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "5" }, reserves: { type: "string", default: "200" }, tasks: { type: "string", default: "60" }, seconds: { type: "string", default: "4" } } });
const ROUNDS = Number(values.rounds);
const RESERVES = Number(values.reserves);
const TASKS = Number(values.tasks);
const SECONDS = Number(values.seconds);
const SRC = "def main(ctx, x):\n    return x + 1\n";

const ca = TestCa.create();
const files = {
  coordinator: ca.issue("coordinator", "blockx://role/coordinator"),
  worker: ca.issue("worker", "blockx://role/worker"),
  client: ca.issue("client", "blockx://role/client/bench"),
};
// Plaintext tasks share executors as one TLS client's do (else each pays a fresh executor: not TLS's cost).
const PLAIN = { BLOCKX_INSECURE: "1", EXECUTOR_OWNER_WITHOUT_IDENTITY: "shared" };
// Slots reserved and never submitted expire fast and many fit: reserves must not run out of slots.
const WORKER_ENV = { TASK_SLOTS: "2000", WORKER_MAX_SLOT_TTL_MS: "1000", EXECUTOR_COUNT: "2" };

interface Side {
  readonly name: "tls" | "plain";
  readonly cluster: TestCluster;
  readonly coordAddr: string;
  readonly reserveClient: CoordinatorServiceClient;
  readonly sdk: BlockxClient;
}

async function start(name: Side["name"]): Promise<Side> {
  const cluster = new TestCluster();
  const tlsEnv = (who: keyof typeof files): Record<string, string> => (name === "tls" ? { ...files[who] } : PLAIN);
  await cluster.worker({ ...WORKER_ENV, ...tlsEnv("worker") });
  const coordAddr = (await cluster.coordinator(tlsEnv("coordinator"))).addr;
  const setting: TlsSetting =
    name === "tls"
      ? compileTlsSetting({ tlsCaFile: files.client.BLOCKX_TLS_CA_FILE, tlsCertFile: files.client.BLOCKX_TLS_CERT_FILE, tlsKeyFile: files.client.BLOCKX_TLS_KEY_FILE, insecure: "0" })
      : { kind: "insecure" };
  const ch = channelFor(setting, coordAddr, ["coordinator"]);
  const reserveClient = new CoordinatorServiceClient(coordAddr, ch.credentials, ch.options);
  const sdk = new BlockxClient(cluster.clientConfig({ BLOCKX_COORDINATOR_ADDRS: coordAddr, ...tlsEnv("client") }));
  return { name, cluster, coordAddr, reserveClient, sdk };
}

const reserveOnce = (s: Side) => (seq: number) =>
  new Promise<void>((resolve, reject) =>
    s.reserveClient.reserveWorkerSlot({ taskId: `r-${s.name}-${process.pid}-${seq}-${Math.random()}` }, new grpc.Metadata(), { deadline: Date.now() + 10_000 }, (e) => (e ? reject(e) : resolve())),
  );

let taskSeq = 0;
const taskOnce = (s: Side) => async () => {
  const n = taskSeq++;
  const r = await s.sdk.runTask(inputsTask(`t-${s.name}-${process.pid}-${n}`, SRC, [n]));
  if (!r.succeeded) throw new Error(`tiny task failed on ${s.name}: ${r.state}`);
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// One etcd of its own for both lanes (TestCluster reads its endpoint from here).
const etcd = await EtcdProcess.start();
process.env.BLOCKX_TEST_ETCD_ENDPOINT = etcd.endpoint;
const sides = [await start("tls"), await start("plain")];
try {
  // The Coordinators' views fill within a heartbeat or two: wait until a reservation succeeds.
  for (const s of sides) {
    for (let i = 0; ; i++) {
      try {
        await reserveOnce(s)(-1 - i);
        break;
      } catch (e) {
        if (i > 100) throw e;
        await Bun.sleep(200);
      }
    }
  }
  const figures: Record<Side["name"], { reserveP50: number[]; taskP50: number[]; perSecond: number[] }> = {
    tls: { reserveP50: [], taskP50: [], perSecond: [] },
    plain: { reserveP50: [], taskP50: [], perSecond: [] },
  };
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which side goes first, so that drift hits both alike.
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const s of order) figures[s.name].reserveP50.push((await latency(reserveOnce(s), RESERVES, 20)).p50);
    for (const s of order) figures[s.name].taskP50.push((await latency(taskOnce(s), TASKS, 5)).p50);
    for (const s of order) figures[s.name].perSecond.push(await throughput(taskOnce(s), 8, SECONDS));
    console.error(`round ${round + 1}/${ROUNDS} done`);
  }
  const row = (label: string, key: "reserveP50" | "taskP50" | "perSecond", unit: string, scale: number) => {
    const t = median(figures.tls[key]) * scale;
    const p = median(figures.plain[key]) * scale;
    return `| ${label} | ${t.toFixed(1)} ${unit} | ${p.toFixed(1)} ${unit} | ${(t / p).toFixed(2)} |`;
  };
  console.log(`medians of ${ROUNDS} interleaved rounds (reserve: ${RESERVES} serial calls; tiny task: ${TASKS} serial, then ${SECONDS} s at 8 in flight)`);
  console.log("| figure | mTLS | plaintext (baseline) | mTLS / plaintext |");
  console.log("| --- | ---: | ---: | ---: |");
  console.log(row("ReserveWorkerSlot p50", "reserveP50", "µs", 1));
  console.log(row("tiny task end to end p50", "taskP50", "ms", 1 / 1000));
  console.log(row("tiny tasks per second (8 in flight)", "perSecond", "/s", 1));
} finally {
  for (const s of sides) {
    s.reserveClient.close();
    s.sdk.close();
    await s.cluster.stop();
  }
  await etcd.destroy();
}
