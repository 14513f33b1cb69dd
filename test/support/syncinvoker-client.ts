import * as grpc from "@grpc/grpc-js";
import {
  SyncInvokerServiceClient,
  type DebugInvokeResponse,
  type Durations,
  type InvokeResponse,
  type PrecheckResponse,
} from "../../src/gen/syncinvoker/v1/sync_invoker";
import { expect } from "bun:test";
import type { Rpc } from "./worker-client";
import { suiteChannel } from "./suite-tls";

export interface InvokeArgs {
  name?: string;
  source?: string;
  entry?: string;
  /** JSON text (sent as is, so a test can send bytes that are not JSON). */
  args?: string;
  timeoutMs?: number;
  /** gRPC deadline from now; default 60 s. */
  deadlineMs?: number;
}

/** SyncInvokerClient: the three RPCs of one Sync Invoker, each answering ok or a status. */
export class SyncInvokerClient {
  readonly client: SyncInvokerServiceClient;
  /** As the suite's client by default (mTLS unless the run is plaintext). */
  constructor(
    readonly addr: string,
    channel: { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions } = suiteChannel("client", addr, ["syncinvoker"]),
  ) {
    this.client = new SyncInvokerServiceClient(addr, channel.credentials, channel.options);
  }

  private unary<T>(method: unknown, req: unknown, deadlineMs = 60_000): Promise<Rpc<T>> {
    return new Promise((resolve) =>
      (method as (r: unknown, md: grpc.Metadata, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r?: T) => void) => unknown).call(
        this.client,
        req,
        new grpc.Metadata(),
        { deadline: Date.now() + deadlineMs },
        (e, r) => resolve(e ? { ok: false, code: e.code, details: e.details } : { ok: true, value: r as T }),
      ),
    );
  }

  private request(a: InvokeArgs) {
    return {
      function: { name: a.name ?? "", source: a.source ?? "", entry: a.entry ?? "" },
      args: Buffer.from(a.args ?? "null"),
      timeoutMs: a.timeoutMs ?? 0,
    };
  }

  invoke(a: InvokeArgs): Promise<Rpc<InvokeResponse>> {
    return this.unary(this.client.invoke, this.request(a), a.deadlineMs);
  }
  debugInvoke(a: InvokeArgs): Promise<Rpc<DebugInvokeResponse>> {
    return this.unary(this.client.debugInvoke, this.request(a), a.deadlineMs);
  }
  precheck(a: { name?: string; source?: string; entry?: string }): Promise<Rpc<PrecheckResponse>> {
    return this.unary(this.client.precheck, { function: { name: a.name ?? "", source: a.source ?? "", entry: a.entry ?? "" } });
  }
  close(): void {
    this.client.close();
  }
}

/** checkDurations throws unless the durations hold the invariants every response must keep. */
export function checkDurations(d: Durations | undefined): Durations {
  if (!d) throw new Error("durations missing");
  const bad = [d.queueMs, d.cpuMs, d.ioMs, d.totalMs].some((x) => !(x >= 0));
  if (bad || d.cpuMs + d.ioMs > d.totalMs || d.queueMs > d.totalMs) throw new Error(`durations break the invariants: ${JSON.stringify(d)}`);
  return d;
}

/** expectRefused asserts that an RPC failed with `code` and a message containing each fragment. */
export function expectRefused(r: Rpc<unknown>, code: grpc.status, ...fragments: string[]): void {
  expect(r.ok ? "answered OK" : grpc.status[r.code]).toBe(grpc.status[code]);
  for (const f of fragments) expect(r.ok ? "" : r.details).toContain(f);
}
