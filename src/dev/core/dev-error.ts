export type DevErrorCode = "ETCD_NOT_FOUND" | "DEV_DIR_UNUSABLE" | "POSTGRES_NOT_FOUND" | "POSTGRES_FAILED" | "CONFLICTING_STORES" | "SANDBOX_UNAVAILABLE" | "EXECUTORS_UNAVAILABLE";

/** DevError: `blockx dev` cannot start; the message tells the person what to do. Exit code 2. */
export class DevError extends Error {
  constructor(
    readonly code: DevErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "DevError";
  }
}
