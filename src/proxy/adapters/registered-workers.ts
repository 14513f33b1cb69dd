import type { Etcd3 } from "etcd3";
import type { Logger } from "../../common/logging/logger";
import { registeredWorkers } from "../../sdk/worker-registry";

/** How often the registry is read again. */
export const REGISTRY_REFRESH_MS = 1_000;
/**
 * A Worker whose key vanished is still relayed to for this long: a Worker re-registering after a
 * lapsed lease (a loaded host) must not cut its clients off mid-task; an address that was never
 * registered gets nothing from this.
 */
export const VANISHED_GRACE_MS = 30_000;
/** A miss reads the registry again at most this often (a caller naming strangers cannot make the proxy hammer etcd). */
export const MISS_REREAD_MS = 200;

/**
 * RegisteredWorkers answers whether an address is a Worker in the current etcd registry (every
 * heartbeat under /blockx/ whose prefix is a registry prefix): the only places the proxy relays
 * worker.v1 calls to. It re-reads every REGISTRY_REFRESH_MS, and on a miss (a Worker that just
 * registered) once more, at most every MISS_REREAD_MS.
 */
export class RegisteredWorkers {
  /** Address -> when a read last saw it (performance.now()). */
  private readonly seen = new Map<string, number>();
  private lastReadMs = Number.NEGATIVE_INFINITY;
  private lastReadStartMs = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | null = null;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly etcd: Etcd3,
    private readonly log: Logger,
  ) {
    this.timer = setInterval(() => void this.read(), REGISTRY_REFRESH_MS);
  }

  /**
   * has: true for a registered Worker. A miss waits for the next read the rate allows (at most
   * MISS_REREAD_MS) and asks again, so a Worker registered just before is not refused.
   */
  async has(addr: string): Promise<boolean> {
    if (this.known(addr)) return true;
    const missedAt = performance.now();
    const wait = this.lastReadMs + MISS_REREAD_MS - missedAt;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    // The answer needs a read that began after the miss and has ended. Let the read under way end
    // first (whenever it began: one that began after the miss but is still in flight has not been
    // applied yet), then read again unless the one that just ended began after the miss. No new
    // read can begin between that read's end and this continuation (only microtasks run there).
    await this.reading;
    if (this.lastReadStartMs < missedAt) await this.read();
    return this.known(addr);
  }

  private known(addr: string): boolean {
    const at = this.seen.get(addr);
    return at !== undefined && performance.now() - at < VANISHED_GRACE_MS;
  }

  /** read replaces the set from etcd (one read at a time); on failure the last set stays. */
  read(): Promise<void> {
    this.reading ??= (async () => {
      this.lastReadStartMs = performance.now();
      try {
        const kv = await this.etcd.getAll().prefix("/blockx/").strings();
        const now = performance.now();
        for (const w of registeredWorkers(kv, Date.now())) this.seen.set(w.addr, now);
        for (const [addr, at] of this.seen) if (now - at >= VANISHED_GRACE_MS) this.seen.delete(addr);
        this.lastReadMs = now;
      } catch (e) {
        this.log.warn({ err: e }, "reading the Worker registry failed; relaying by the last one read");
      } finally {
        this.reading = null;
      }
    })();
    return this.reading;
  }

  close(): void {
    clearInterval(this.timer);
  }
}
