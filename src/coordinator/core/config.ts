/**
 * CoordinatorCoreConfig holds the selection and protection parameters of CoordinatorCore
 * (the seed's `core.Config`). `defaultCoordinatorCoreConfig()` gives the seed's defaults;
 * `validateCoordinatorCoreConfig` returns every broken rule (empty = valid).
 */
export interface CoordinatorCoreConfig {
  /** A Worker whose `now - lastHeartbeatMs` exceeds this is filtered out. */
  readonly heartbeatTimeoutMs: number;
  /** After the watch has been down this long, the view is untrusted (Unavailable). Must be <= heartbeatTimeoutMs. */
  readonly watchGracePeriodMs: number;
  /** The reservation window passed to the Worker's RequestTaskSlot as ttl_ms. */
  readonly slotTtlMs: number;
  /** Candidates tried per ReserveWorkerSlot, one after another. */
  readonly maxCandidates: number;
  /** Consecutive failures (rejections + timeouts) that open a Worker's breaker. */
  readonly circuitBreakerThreshold: number;
  /** How long an open breaker filters the Worker out. */
  readonly circuitBreakerCooldownMs: number;
  /** Red lines, fractions in (0, 1]: a Worker above any of them is filtered out. */
  readonly cpuRedLine: number;
  readonly memoryRedLine: number;
  readonly errorRateRedLine: number;
}

export function defaultCoordinatorCoreConfig(): CoordinatorCoreConfig {
  return {
    heartbeatTimeoutMs: 10_000,
    watchGracePeriodMs: 10_000,
    slotTtlMs: 5_000,
    maxCandidates: 3,
    circuitBreakerThreshold: 3,
    circuitBreakerCooldownMs: 10_000,
    cpuRedLine: 0.9,
    memoryRedLine: 0.9,
    errorRateRedLine: 0.5,
  };
}

/** validateCoordinatorCoreConfig lists the broken rules, each naming the field. */
export function validateCoordinatorCoreConfig(c: CoordinatorCoreConfig): string[] {
  const problems: string[] = [];
  const positiveInt = (name: keyof CoordinatorCoreConfig) => {
    const v = c[name];
    if (!Number.isInteger(v) || v < 1) problems.push(`${name}: expected an integer >= 1, got ${v}`);
  };
  positiveInt("heartbeatTimeoutMs");
  positiveInt("watchGracePeriodMs");
  positiveInt("slotTtlMs");
  positiveInt("maxCandidates");
  positiveInt("circuitBreakerThreshold");
  positiveInt("circuitBreakerCooldownMs");
  for (const name of ["cpuRedLine", "memoryRedLine", "errorRateRedLine"] as const) {
    const v = c[name];
    if (!(v > 0 && v <= 1)) problems.push(`${name}: expected a number in (0, 1], got ${v}`);
  }
  if (c.watchGracePeriodMs > c.heartbeatTimeoutMs) {
    problems.push(
      `watchGracePeriodMs: must be <= heartbeatTimeoutMs (${c.heartbeatTimeoutMs}), got ${c.watchGracePeriodMs}`,
    );
  }
  return problems;
}
