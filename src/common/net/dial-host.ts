/** hostOf is the host of a dial target `host:port` or `[v6]:port` (brackets removed); the target itself when it has no port. */
export function hostOf(target: string): string {
  const m = /^\[([^\]]+)\]:\d+$/.exec(target) ?? /^([^:]+):\d+$/.exec(target);
  return m ? m[1]! : target;
}
