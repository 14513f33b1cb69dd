import { tlsVars } from "../tls/tls-vars";
import { enumSchema, envVar, listenAddrSchema, stringSchema } from "./env-config";

/** Variables every role reads: logging, the Prometheus endpoint and transport security (tlsVars). */
export const commonVars = {
  logLevel: envVar(
    "BLOCKX_LOG_LEVEL",
    "info",
    "one of trace, debug, info, warn, error, fatal",
    "log level of the JSON lines on stdout",
    enumSchema(["trace", "debug", "info", "warn", "error", "fatal"] as const),
  ),
  prometheusListenAddr: envVar(
    "BLOCKX_PROMETHEUS_LISTEN_ADDR",
    "",
    "host:port, :port, or empty to disable",
    "where /metrics is served (Prometheus text format)",
    listenAddrSchema(true),
  ),
  prometheusPath: envVar(
    "BLOCKX_PROMETHEUS_PATH",
    "/metrics",
    "a path starting with /",
    "HTTP path of the metrics endpoint",
    stringSchema().refine((s) => s.startsWith("/")),
  ),
  ...tlsVars,
};
