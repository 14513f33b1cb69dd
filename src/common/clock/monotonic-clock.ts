/**
 * NowMs is the clock every core of a process is fed from: `handle(event, nowMs)`, deadlines, retry
 * backoffs and timers all read the same one, so a deadline computed by one core is comparable with
 * the time another adapter passes in. Tests inject their own.
 */
export type NowMs = () => number;

/**
 * monotonicNowMs: whole epoch milliseconds that never go backwards (performance.now() anchored at
 * the process's start), so a wall-clock step (NTP, an operator's `date -s`) cannot expire a slot
 * early or hold a retry back. Snapshot timestamps are int64 milliseconds, hence whole numbers.
 * Not for values compared across hosts (heartbeats' lastHeartbeatMs are wall clock, Date.now()).
 */
export const monotonicNowMs: NowMs = () => Math.floor(performance.timeOrigin + performance.now());
