/**
 * terminal-line: which of a child's log lines `blockx dev` shows on the terminal, and how (pure:
 * the DevChild adapter feeds it every line).
 */
export const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"] as const;
export type TerminalLevel = (typeof LEVELS)[number];

/** grpc-go's own connection log lines (etcd's embedded gateway): `WARNING: 2026/12/06 03:10:19 [core] grpc: ...`. */
const GRPC_CORE_CHATTER = /^(INFO|WARNING): \d{4}\/\d\d\/\d\d [\d:.]+ \[core\] /;

/** A log line of a child as the terminal shows it; null when it is below the terminal's level. */
export function terminalLine(id: string, line: string, fromStderr: boolean, min: TerminalLevel): string | null {
  let level: string = fromStderr ? "warn" : "info";
  let text = line;
  try {
    const j = JSON.parse(line) as Record<string, unknown>;
    if (typeof j.level === "string") level = j.level === "warning" ? "warn" : j.level === "panic" ? "fatal" : j.level;
    const err = j.err && typeof j.err === "object" ? (j.err as { message?: unknown }).message : (j.error ?? undefined);
    text = `${String(j.msg ?? line)}${err ? `: ${String(err)}` : ""}`;
  } catch {
    // Not JSON (a Python traceback, etcd's plain text): shown as it is. etcd's gRPC library says
    // every reconnect of its own gateway at WARNING ("[core] ... addrConn.createTransport failed"),
    // e.g. while dev stops it: connection chatter, kept in the log file, not a warning to read.
    if (GRPC_CORE_CHATTER.test(line)) level = "info";
  }
  const rank = LEVELS.indexOf(level as TerminalLevel);
  if ((rank < 0 ? 3 : rank) < LEVELS.indexOf(min)) return null;
  return `[${id}] ${level} ${text}`;
}
