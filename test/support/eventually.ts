/**
 * eventually: the tests' one polling wait. Calls `probe` until it gives a value other than
 * `undefined`, `null` or `false`, and returns that value; past `timeoutMs` it throws, naming
 * `what` and the last value seen. Use it for conditions a real process or timer brings about;
 * never to assert how fast (timed assertions do not belong in tests: the timeout is a bound on a
 * hang, set generously).
 */
export async function eventually<T>(probe: () => T | Promise<T>, o: { readonly what?: string; readonly timeoutMs?: number; readonly stepMs?: number } = {}): Promise<Exclude<T, undefined | null | false>> {
  const timeoutMs = o.timeoutMs ?? 20_000;
  const stepMs = o.stepMs ?? 20;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== null && v !== false) return v as Exclude<T, undefined | null | false>;
    if (performance.now() > deadline) throw new Error(`${o.what ?? "the condition"}: not met within ${timeoutMs} ms (last: ${JSON.stringify(v)})`);
    await Bun.sleep(stepMs);
  }
}
