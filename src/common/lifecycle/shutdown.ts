import { sdNotify } from "./sd-notify";
import type { Logger } from "../logging/logger";

/**
 * onShutdownSignal runs `stop` once on the first SIGINT or SIGTERM and exits when it
 * resolves. A second signal, or `stop` overrunning `forceAfterMs`, exits at once: an operator
 * pressing Ctrl-C twice means it.
 */
export function onShutdownSignal(log: Logger, forceAfterMs: number, stop: (signal: string) => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ component: "lifecycle", signal }, "second signal: exiting now");
      process.exit(130);
    }
    stopping = true;
    sdNotify("STOPPING=1");
    log.info({ component: "lifecycle", signal, forceAfterMs }, "shutting down");
    const force = setTimeout(() => {
      log.error({ component: "lifecycle", forceAfterMs }, "shutdown overran its deadline: exiting now");
      process.exit(1);
    }, forceAfterMs);
    force.unref?.();
    stop(signal).then(
      () => {
        log.info({ component: "lifecycle" }, "stopped");
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ component: "lifecycle", err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
}
