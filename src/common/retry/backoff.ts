/**
 * backoffMs: the exponential backoff every retry loop of the tree uses: `baseMs` doubled `n` times
 * (n = 0 is `baseMs`), never above `maxMs`. Doublings past 30 count as 30, so a long streak of
 * failures neither overflows nor loses the cap. Jitter, where a caller wants it, is the caller's.
 */
export function backoffMs(baseMs: number, maxMs: number, n: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, Math.min(n, 30)));
}
