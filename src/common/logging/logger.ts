import pino from "pino";
import { redactSecrets } from "../config/secret-text";

export type Logger = pino.Logger;
export type LogLevel = "trace" | "debug" | "info" | "warn" | "error" | "fatal";

/**
 * createLogger writes one JSON line per event to stdout (servers; `fd` 2: stderr, for commands
 * whose stdout is their output), synchronously: pino transports run
 * in worker threads that look for files on the build machine and crash a compiled binary.
 * Keys are stable: time (ms), level (a word), msg, component, and the ids of what the line
 * is about (taskId, slotId, workerAddr, callId). Every line passes `redactSecrets`: a secret the
 * configuration read (a store URL's password) never reaches a log, whichever error quoted it.
 */
export function createLogger(level: LogLevel, base: Record<string, unknown> = {}, fd: 1 | 2 = 1): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid, ...base },
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: pino.stdSerializers.err },
      hooks: { streamWrite: redactSecrets },
    },
    pino.destination({ fd, sync: true }),
  );
}

/** A logger that drops everything, for tests of adapters that take a logger. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
