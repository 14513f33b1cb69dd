import type { Etcd3 } from "etcd3";

export interface EtcdClientOptions {
  readonly endpoints: readonly string[];
  readonly dialTimeoutMs: number;
}

/**
 * createEtcdClient imports etcd3 lazily (it costs about 250 ms at start-up, so only roles that
 * talk to etcd pay for it) and sets fault handling for fast recovery: the library's defaults
 * take seconds to notice that etcd is back (host breaker half-opens after 5 s, watch backoff
 * grows to 30 s). Our own loops retry, so the library does not.
 */
export async function createEtcdClient(opts: EtcdClientOptions): Promise<Etcd3> {
  const [{ Etcd3, isRecoverableError }, cockatiel] = await Promise.all([import("etcd3"), import("cockatiel")]);
  return new Etcd3({
    hosts: opts.endpoints.map((e) => (/^https?:\/\//.test(e) ? e : `http://${e}`)),
    dialTimeout: opts.dialTimeoutMs,
    grpcOptions: {
      "grpc.initial_reconnect_backoff_ms": 100,
      "grpc.max_reconnect_backoff_ms": 1_000,
      "grpc.keepalive_time_ms": 5_000,
      "grpc.keepalive_timeout_ms": 3_000,
      "grpc.keepalive_permit_without_calls": 1,
    },
    faultHandling: {
      host: () =>
        cockatiel.circuitBreaker(cockatiel.handleWhen(isRecoverableError), {
          halfOpenAfter: 1_000,
          breaker: new cockatiel.ConsecutiveBreaker(3),
        }),
      global: cockatiel.noop,
      // etcd3 calls next() on this before each wait; an initial instance is exactly that.
      watchBackoff: new cockatiel.ExponentialBackoff({ initialDelay: 100, maxDelay: 1_000 }).next(),
    },
  });
}
