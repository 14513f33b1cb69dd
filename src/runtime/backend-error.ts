/**
 * BackendError: an IO request that failed in a way the user function sees as
 * BackendError(type, message, retryable). Retryable types are transient (BackendUnavailable,
 * BackendOverloaded): the same request may succeed later.
 */
export class BackendError extends Error {
  readonly retryable: boolean;
  constructor(
    readonly type: string,
    message: string,
    opts: { retryable?: boolean } = {},
  ) {
    super(message);
    this.retryable = opts.retryable ?? false;
  }
}
