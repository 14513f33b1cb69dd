import * as grpc from "@grpc/grpc-js";
import { CLIENT_IDENTITY_HEADER } from "../../src/common/tls/client-identity-header";
import { FunctionCallConfig, Task, TaskState, WorkerServiceClient, type TaskResult, type TaskSnapshot } from "../../src/gen/worker/v1/worker";
import { SUITE_CLIENT, suiteChannel, suiteSetting } from "./suite-tls";

export type Rpc<T> = { ok: true; value: T } | { ok: false; code: grpc.status; details: string };

/** WorkerClient: the calls a client makes to one Worker, each answering ok or a status. */
export class WorkerClient {
  readonly client: WorkerServiceClient;
  /** Who RequestTaskSlot goes through: a Coordinator's channel by default (only Coordinators may call it). */
  private readonly slotClient: WorkerServiceClient;
  private readonly slotMetadata: () => grpc.Metadata;
  /**
   * `channel`: by default the suite's client certificate for task RPCs and, for RequestTaskSlot,
   * the suite Coordinator's naming the suite client (so the slot is the client's); test/security
   * passes its own credentials (channelFor), used for every call.
   */
  constructor(
    readonly addr: string,
    channel?: { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions },
    private readonly metadata: () => grpc.Metadata = () => new grpc.Metadata(),
  ) {
    const asClient = channel ?? suiteChannel("client", addr, ["worker"]);
    this.client = new WorkerServiceClient(addr, asClient.credentials, asClient.options);
    if (channel) {
      this.slotClient = this.client;
      this.slotMetadata = metadata;
    } else {
      const asCoordinator = suiteChannel("coordinator", addr, ["worker"]);
      this.slotClient = new WorkerServiceClient(addr, asCoordinator.credentials, asCoordinator.options);
      this.slotMetadata = () => {
        const md = metadata();
        if (suiteSetting("coordinator").kind === "mtls") md.set(CLIENT_IDENTITY_HEADER, SUITE_CLIENT);
        return md;
      };
    }
  }

  private unary<T>(
    method: (req: never, md: grpc.Metadata, opts: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r?: T) => void) => unknown,
    req: unknown,
    client: WorkerServiceClient = this.client,
    metadata: () => grpc.Metadata = this.metadata,
    deadlineMs = Date.now() + 30_000,
  ): Promise<Rpc<T>> {
    return new Promise((resolve) =>
      method.call(client, req as never, metadata(), { deadline: deadlineMs }, (e, r) =>
        resolve(e ? { ok: false, code: e.code, details: e.details } : { ok: true, value: r as T }),
      ),
    );
  }

  requestTaskSlot(taskId: string, ttlMs = 5000): Promise<Rpc<TaskSnapshot>> {
    return this.unary(this.slotClient.requestTaskSlot as never, { taskId, ttlMs }, this.slotClient, this.slotMetadata);
  }
  /** submitTask; with `waitMs`, the Worker answers at the task's end if that comes first (wait_ms); `resubmit`: replace the task id's earlier runs. */
  submitTask(task: Task, slotId = "", o: { waitMs?: number; deadlineMs?: number; resubmit?: boolean } = {}): Promise<Rpc<TaskSnapshot>> {
    return this.unary(this.client.submitTask as never, { task, slotId, waitMs: o.waitMs ?? 0, resubmit: o.resubmit ?? false }, this.client, this.metadata, o.deadlineMs);
  }
  cancelTask(taskId: string, reason = "test"): Promise<Rpc<TaskSnapshot>> {
    return this.unary(this.client.cancelTask as never, { taskId, reason });
  }
  getTaskResult(taskId: string): Promise<Rpc<TaskResult>> {
    return this.unary(this.client.getTaskResult as never, { taskId });
  }

  /** watch collects every snapshot of WatchTasks until the stream ends (or fails). */
  watch(taskIds: string[], withResults = false, terminalOnly = false): Promise<{ snapshots: TaskSnapshot[]; error?: grpc.ServiceError }> {
    return new Promise((resolve) => {
      const snapshots: TaskSnapshot[] = [];
      const stream = this.client.watchTasks({ taskIds, withResults, terminalOnly }, this.metadata());
      stream.on("data", (s: TaskSnapshot) => snapshots.push(s));
      stream.on("end", () => resolve({ snapshots }));
      stream.on("error", (error: grpc.ServiceError) => resolve({ snapshots, error }));
    });
  }

  close(): void {
    this.client.close();
    if (this.slotClient !== this.client) this.slotClient.close();
  }
}

/** inputsTask builds an InputsCallConfig task with inline source and a ReturnValueHandler. */
export function inputsTask(taskId: string, source: string, inputs: unknown[], timeoutMs = 0): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source, entry: "main" },
      config: { $case: "inputs", inputs: { inputs: inputs.map((i) => Buffer.from(JSON.stringify(i))) } },
    }),
    outputs: [{ handler: { $case: "returnValue", returnValue: {} } }],
    taskTimeoutMs: timeoutMs,
  });
}

/**
 * rangeTask builds a task over blocks from..to of the synthetic "ethereum" chain, by inline source
 * or by name: a block table (one call per block), or a bundle table of `bundleSize` blocks a call.
 */
export function rangeTask(taskId: string, fn: { source?: string; name?: string }, from: number, to: number, outputs: Task["outputs"], bundleSize = 0): Task {
  return Task.fromPartial({
    taskId,
    functionCallConfig: FunctionCallConfig.fromPartial({
      function: { source: fn.source ?? "", name: fn.name ?? "", entry: "main" },
      config:
        bundleSize > 0
          ? { $case: "blockBundle", blockBundle: { chain: "ethereum", fromBlock: from, toBlock: to, bundleSize } }
          : { $case: "blockTable", blockTable: { chain: "ethereum", fromBlock: from, toBlock: to } },
    }),
    outputs,
  });
}

export const TERMINAL_STATES = [TaskState.SUCCEEDED, TaskState.FAILED, TaskState.TIMED_OUT, TaskState.CANCELLED];
