import type { ErrorCode } from "../../common/error-code";

/**
 * FilterCounts says why no Worker was picked: every Worker in the view is counted exactly once,
 * under the FIRST reason in this order that applies to it:
 *
 *   excluded -> overCpuRedLine -> overMemoryRedLine -> overErrorRateRedLine -> noFreeCapacity
 *   -> breakerOpen -> heartbeatStale
 *
 * The hard filters are a conjunction, so their order never changes a decision; it only decides
 * which reason a Worker that fails several filters is reported under. This order (not the seed's
 * filter order, where staleness comes second) is the one CoordinatorCore can count without
 * scanning every Worker: the red-line and capacity counts are kept up to date on each heartbeat,
 * the breaker count is the number of parked Workers, and the stale count is what remains.
 */
export interface FilterCounts {
  readonly total: number;
  readonly excluded: number;
  readonly overCpuRedLine: number;
  readonly overMemoryRedLine: number;
  readonly overErrorRateRedLine: number;
  readonly noFreeCapacity: number;
  readonly breakerOpen: number;
  readonly heartbeatStale: number;
}

/**
 * CoordinatorError is the one error class of the Coordinator (the seed's `core.CoordinatorError`).
 * Like connect-es's ConnectError, `message` starts with the code in brackets
 * (`[NO_EXECUTABLE_SLOT] ...`) and `rawMessage` holds the text without it. The adapter maps
 * `code` to a gRPC status in exactly one place (`coordCodeToGRPC`).
 *
 * `filterCounts` is set on NO_EXECUTABLE_SLOT errors answering candidateRequested so that an adapter can
 * log or count the reasons without parsing the message.
 */
export class CoordinatorError extends Error {
  override readonly name = "CoordinatorError";
  readonly code: ErrorCode;
  readonly rawMessage: string;
  readonly filterCounts: FilterCounts | undefined;

  constructor(code: ErrorCode, rawMessage: string, filterCounts?: FilterCounts) {
    super(`[${code}] ${rawMessage}`);
    this.code = code;
    this.rawMessage = rawMessage;
    this.filterCounts = filterCounts;
  }
}

/**
 * describeFilterCounts renders the non-zero counts for a person, in the attribution order, e.g.
 * `12 workers: 1 excluded, 3 over the CPU red line 0.9, 2 circuit breaker open, 6 heartbeat stale`.
 */
export function describeFilterCounts(
  c: FilterCounts,
  redLines: { readonly cpuRedLine: number; readonly memoryRedLine: number; readonly errorRateRedLine: number },
  heartbeatTimeoutMs: number,
): string {
  const parts: string[] = [];
  const add = (n: number, what: string) => {
    if (n > 0) parts.push(`${n} ${what}`);
  };
  add(c.excluded, "excluded (already tried)");
  add(c.overCpuRedLine, `over the CPU red line ${redLines.cpuRedLine}`);
  add(c.overMemoryRedLine, `over the memory red line ${redLines.memoryRedLine}`);
  add(c.overErrorRateRedLine, `over the error-rate red line ${redLines.errorRateRedLine}`);
  add(c.noFreeCapacity, "without free capacity");
  add(c.breakerOpen, "circuit breaker open");
  add(c.heartbeatStale, `heartbeat older than ${heartbeatTimeoutMs} ms`);
  const head = `${c.total} ${c.total === 1 ? "worker" : "workers"}`;
  return parts.length === 0 ? head : `${head}: ${parts.join(", ")}`;
}
