import * as grpc from "@grpc/grpc-js";
import { BundleCoordinatorServiceClient } from "../../src/gen/bundlecoordinator/v1/bundle_coordinator";
import { CoordinatorServiceClient, type ReserveWorkerSlotResponse } from "../../src/gen/coordinator/v1/coordinator";
import { HealthCheckResponse_ServingStatus, HealthClient } from "../../src/gen/grpc/health/v1/health";
import { suiteChannel } from "./suite-tls";
import { eventually } from "./eventually";

export type ReserveOutcome = { ok: true; res: ReserveWorkerSlotResponse } | { ok: false; code: grpc.status; details: string };

/** gzip on every request: the Coordinator must accept compressed messages. */
const GZIP: grpc.ChannelOptions = { "grpc.default_compression_algorithm": 2, "grpc.default_compression_level": 2 };

/** reserve calls ReserveWorkerSlot on a block (or bundle) Coordinator with grpc-js. */
export function reserve(
  addr: string,
  taskId: string,
  kind: "block" | "bundle" = "block",
  channel: { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions } = suiteChannel("client", addr, ["coordinator"]),
): Promise<ReserveOutcome> {
  const Ctor = kind === "block" ? CoordinatorServiceClient : BundleCoordinatorServiceClient;
  const client = new Ctor(addr, channel.credentials, { ...GZIP, ...channel.options });
  return new Promise((resolve) => {
    client.reserveWorkerSlot({ taskId }, new grpc.Metadata(), { deadline: Date.now() + 20_000 }, (err, res) => {
      client.close();
      if (err) resolve({ ok: false, code: err.code, details: err.details });
      else resolve({ ok: true, res: res! });
    });
  });
}

/** healthCheck asks a BlockX server's health service, as the suite's client (any server role answers). */
export function healthCheck(addr: string, service = ""): Promise<HealthCheckResponse_ServingStatus | grpc.status> {
  const ch = suiteChannel("client", addr, ["coordinator", "worker", "syncinvoker"]);
  const client = new HealthClient(addr, ch.credentials, ch.options);
  return new Promise((resolve) => {
    client.check({ service }, new grpc.Metadata(), { deadline: Date.now() + 10_000 }, (err, res) => {
      client.close();
      resolve(err ? err.code : res!.status);
    });
  });
}

/** waitFor polls `probe` until `accept` holds or timeoutMs passes; returns the last value. */
export async function waitFor<T>(probe: () => Promise<T>, accept: (v: T) => boolean, timeoutMs = 20_000, stepMs = 100): Promise<T> {
  let last: T | undefined;
  try {
    const seen = await eventually(
      async () => {
        last = await probe();
        return accept(last) ? { v: last } : false;
      },
      { timeoutMs, stepMs },
    );
    return seen.v;
  } catch {
    throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(last)}`);
  }
}

/**
 * Coordinator variables for tests with real Workers on this host: their heartbeats carry the
 * host's real CPU and memory, and a 2-core machine busy with other test runs is often above
 * the 0.9 red line, which would turn every reservation away for reasons no test is about.
 */
export const NO_HOST_RED_LINES = { COORDINATOR_CPU_RED_LINE: "1", COORDINATOR_MEMORY_RED_LINE: "1" } as const;
