/**
 * likelyStartCause reads the stderr of an executor that died before saying Hello and names the
 * likely cause in words an operator can act on. Pure: the pool passes what it knows.
 */
export function likelyStartCause(
  stderr: readonly string[],
  ctx: { readonly python: string; readonly pythonPath: string; readonly user: string; readonly exitCode: number | null },
): string {
  const text = stderr.join("\n");
  const missing = /No module named '?([A-Za-z0-9_.]+)'?/.exec(text)?.[1];
  if (missing === "blockx_executor" || missing?.startsWith("blockx_executor.")) {
    return (
      `Python could not import blockx_executor from PYTHONPATH ${ctx.pythonPath}: executors run as ${ctx.user}, ` +
      `who must be able to read that folder and pass through every folder above it (set BLOCKX_CACHE_DIR to a folder that user can read)`
    );
  }
  if (missing) {
    return `the module ${missing} is missing: a damaged executor copy at ${ctx.pythonPath} (delete it; it is unpacked again at the next start), or an EXECUTOR_PYTHON (${ctx.python}) without it`;
  }
  if (/^(setpriv|unshare|setsid):/m.test(text)) {
    return "the host refused the executor's isolation (setsid, unshare -n, setpriv); try EXECUTOR_NETWORK_ISOLATION=off or EXECUTOR_USER=";
  }
  if (/Permission denied/.test(text)) {
    return `a permission was denied to ${ctx.user}: check that EXECUTOR_PYTHON (${ctx.python}) and PYTHONPATH ${ctx.pythonPath} are readable by that user`;
  }
  if (/SyntaxError/.test(text)) return `EXECUTOR_PYTHON (${ctx.python}) cannot parse the executor code: it needs Python 3.10 or newer`;
  if (ctx.exitCode === 126 || ctx.exitCode === 127) return `EXECUTOR_PYTHON (${ctx.python}) or a wrapper (setsid, unshare, setpriv) could not be executed`;
  return "see the executor's stderr above";
}
