import { readFileSync } from "node:fs";
import type { EtcdTls } from "./etcd-access";

/**
 * etcdHttpUrl: an ETCD_ENDPOINTS entry (`host:port` or a URL) as the base URL of etcd's HTTP
 * endpoints (`/health`, `/version`, served on the client port beside gRPC): https when etcd is
 * dialled over TLS.
 */
export function etcdHttpUrl(endpoint: string, tls: EtcdTls | null): string {
  return (/^https?:\/\//.test(endpoint) ? endpoint : `${tls ? "https" : "http"}://${endpoint}`).replace(/\/+$/, "");
}

/**
 * etcdFetch GETs one of etcd's HTTP paths, with the client certificate when there is one (etcd's
 * --client-cert-auth asks for it on every request of the client port). The files are read on each
 * call, so a rotated certificate is used at once.
 */
export function etcdFetch(endpoint: string, path: string, tls: EtcdTls | null, timeoutMs: number): Promise<Response> {
  const init: RequestInit & { tls?: { ca: string; cert?: string; key?: string } } = { signal: AbortSignal.timeout(timeoutMs) };
  if (tls) {
    init.tls = {
      ca: readFileSync(tls.caFile, "utf8"),
      ...(tls.client ? { cert: readFileSync(tls.client.certFile, "utf8"), key: readFileSync(tls.client.keyFile, "utf8") } : {}),
    };
  }
  return fetch(`${etcdHttpUrl(endpoint, tls)}${path}`, init);
}
