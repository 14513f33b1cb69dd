import * as grpc from "@grpc/grpc-js";
import { FunctionCallConfig, Task, TaskState, WorkerServiceClient, type TaskResult, type TaskSnapshot } from "../../src/gen/worker/v1/worker";

export type Rpc<T> = { ok: true; value: T } | { ok: false; code: grpc.status; details: string };

/** WorkerClient: the calls a client makes to one Worker, each answering ok or a status. */
export class WorkerClient {
  readonly client: WorkerServiceClient;
  /** `channel`: plaintext by default; test/security passes mTLS credentials (channelFor). */
  constructor(
    readonly addr: string,
    channel: { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions } = { credentials: grpc.credentials.createInsecure(), options: {} },
    private readonly metadata: () => grpc.Metadata = () => new grpc.Metadata(),
  ) {
    this.client = new WorkerServiceClient(addr, channel.credentials, channel.options);
  }

  private unary<T>(method: (req: never, md: grpc.Metadata, opts: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r?: T) => void) => unknown, req: unknown): Promise<Rpc<T>> {
    return new Promise((resolve) =>
      method.call(this.client, req as never, this.metadata(), { deadline: Date.now() + 30_000 }, (e, r) =>
        resolve(e ? { ok: false, code: e.code, details: e.details } : { ok: true, value: r as T }),
      ),
    );
  }

  requestTaskSlot(taskId: string, ttlMs = 5000): Promise<Rpc<TaskSnapshot>> {
    return this.unary(this.client.requestTaskSlot as never, { taskId, ttlMs });
  }
  submitTask(task: Task, slotId = ""): Promise<Rpc<TaskSnapshot>> {
    return this.unary(this.client.submitTask as never, { task, slotId });
  }
  cancelTask(taskId: string, reason = "test"): Promise<Rpc<TaskSnapshot>> {
    return this.unary(this.client.cancelTask as never, { taskId, reason });
  }
  getTaskResult(taskId: string): Promise<Rpc<TaskResult>> {
    return this.unary(this.client.getTaskResult as never, { taskId });
  }

  /** watch collects every snapshot of WatchTasks until the stream ends (or fails). */
  watch(taskIds: string[]): Promise<{ snapshots: TaskSnapshot[]; error?: grpc.ServiceError }> {
    return new Promise((resolve) => {
      const snapshots: TaskSnapshot[] = [];
      const stream = this.client.watchTasks({ taskIds }, this.metadata());
      stream.on("data", (s: TaskSnapshot) => snapshots.push(s));
      stream.on("end", () => resolve({ snapshots }));
      stream.on("error", (error: grpc.ServiceError) => resolve({ snapshots, error }));
    });
  }

  close(): void {
    this.client.close();
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
