import type * as grpc from "@grpc/grpc-js";
import type { Etcd3 } from "etcd3";
import { readFileSync } from "node:fs";
import { ETCD_PLAINTEXT, type EtcdAccess, type EtcdTls } from "./etcd-access";

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
 * when set, is the etcd user (its CN). The files are re-read every second like BLOCKX_TLS_*'s
 * (new connections use a rotated certificate). With ETCD_USERNAME the library trades the
 * password for a token and renews it when etcd says it expired.
 */
export async function createEtcdClient(opts: EtcdClientOptions): Promise<Etcd3> {
  const access = opts.access ?? ETCD_PLAINTEXT;
  const [{ Etcd3, isRecoverableError }, cockatiel] = await Promise.all([import("etcd3"), import("cockatiel")]);
  const tls = access.tls;
  const client = new Etcd3({
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
  if (tls) await dialWithReloadingTls(client, tls);
  return client;
}

/** The parts of etcd3 1.1.2's connection pool (pinned in package.json) that hold a host's channel. */
interface PoolInternals {
  readonly hosts: { readonly host: string; channelCredentials: grpc.ChannelCredentials; channelOptions: grpc.ChannelOptions | undefined; getServiceClient(name: "Auth"): unknown }[];
  readonly authenticator: { getCredentialsFromHost: (address: string, name: string, password: string, callOptions: grpc.CallOptions | undefined) => Promise<string> };
}

type AuthenticateClient = {
  authenticate(req: { name: string; password: string }, md: grpc.Metadata, opts: grpc.CallOptions, cb: (e: grpc.ServiceError | null, res?: { token: string }) => void): void;
};

/**
 * dialWithReloadingTls gives each etcd host of `client` the BlockX TLS channel instead of etcd3's
 * fixed one (`credentials` takes buffers once, and grpc-js sends an IP host as TLS servername,
 * which Bun refuses): the files are watched (rotation without restart), the certificate must
 * name the host dialled, and the password-to-token exchange goes over the same channel.
 */
async function dialWithReloadingTls(client: Etcd3, tls: EtcdTls): Promise<void> {
  const [{ tlsChannel }, grpcJs] = await Promise.all([import("../tls/grpc-tls"), import("@grpc/grpc-js")]);
  const pool = (client as unknown as { pool?: Partial<PoolInternals> }).pool;
  if (!pool || !Array.isArray(pool.hosts) || !pool.authenticator) throw new Error("etcd3's connection pool is not the one this build knows (etcd3 1.1.2): cannot dial etcd over TLS");
  const files = { caFile: tls.caFile, ...(tls.client ? { certFile: tls.client.certFile, keyFile: tls.client.keyFile } : {}) };
  for (const h of pool.hosts) {
    const ch = tlsChannel(files, h.host);
    h.channelCredentials = ch.credentials;
    h.channelOptions = { ...h.channelOptions, ...ch.options };
  }
  const hosts = pool.hosts;
  pool.authenticator.getCredentialsFromHost = (address, name, password, callOptions) =>
    new Promise((resolve, reject) => {
      const h = hosts.find((x) => x.host === address);
      if (!h) return reject(new Error(`etcd host ${address} is not one of ETCD_ENDPOINTS`));
      (h.getServiceClient("Auth") as AuthenticateClient).authenticate({ name, password }, new grpcJs.Metadata(), callOptions ?? {}, (e, res) => (e ? reject(e) : resolve(res!.token)));
    });
}
