/**
 * validated wraps a pure core so that validateState() runs after every method call: every step of
 * every scenario checks the core's invariants, and a broken one fails at the step that broke it.
 */
export function validated<T extends { validateState(): void }>(core: T): T {
  core.validateState();
  return new Proxy(core, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== "function" || prop === "validateState") return v;
      return (...args: unknown[]) => {
        const out = (v as (...a: unknown[]) => unknown).apply(target, args);
        target.validateState();
        return out;
      };
    },
  });
}
