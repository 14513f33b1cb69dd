import type { Etcd3 } from "etcd3";
import { readFileSync } from "node:fs";
import { ETCD_PLAINTEXT, type EtcdAccess } from "./etcd-access";

export interface EtcdClientOptions {
  readonly endpoints: readonly string[];
  readonly dialTimeoutMs: number;
  /** ETCD_TLS_* and the etcd user, compiled; absent: plaintext without a user (tests' etcd). */
  readonly access?: EtcdAccess;
}

/**
 * createEtcdClient imports etcd3 lazily (it costs about 250 ms at start-up, so only roles that
 * talk to etcd pay for it) and sets fault handling for fast recovery: the library's defaults
 * take seconds to notice that etcd is back (host breaker half-opens after 5 s, watch backoff
 * grows to 30 s). Our own loops retry, so the library does not.
 *
 * With ETCD_TLS_* the endpoints are https (host:port entries get the scheme) and etcd's
 * certificate must chain to ETCD_TLS_CA_FILE and cover the host dialled; the client certificate,
 * when set, is the etcd user (its CN). With ETCD_USERNAME the library trades the password for a
 * token and renews it when etcd says it expired.
 */
export async function createEtcdClient(opts: EtcdClientOptions): Promise<Etcd3> {
  const access = opts.access ?? ETCD_PLAINTEXT;
  const [{ Etcd3, isRecoverableError }, cockatiel] = await Promise.all([import("etcd3"), import("cockatiel")]);
  const tls = access.tls;
  return new Etcd3({
    hosts: opts.endpoints.map((e) => (/^https?:\/\//.test(e) ? e : `${tls ? "https" : "http"}://${e}`)),
    ...(tls
      ? {
          credentials: {
            rootCertificate: readFileSync(tls.caFile),
            ...(tls.client ? { privateKey: readFileSync(tls.client.keyFile), certChain: readFileSync(tls.client.certFile) } : {}),
          },
        }
      : {}),
    ...(access.auth ? { auth: { username: access.auth.username, password: access.auth.password } } : {}),
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
