import type { FollowerReorgSchema, FollowerStatus } from "../../follow/core/follower-status";
import type { z } from "zod";

export const FOLLOWER_HEADER = ["TABLE", "CHAIN", "STATE", "POSITION", "HEAD", "LAG", "LAST REORG", "REORGS", "UPDATED"] as const;

/** clockText: a UTC time of day ("12:01:02"), with its date in front when it is not `nowMs`'s day (as `blockx tasks` prints times, in UTC). */
function clockText(ms: number, nowMs: number): string {
  const iso = new Date(ms).toISOString();
  return iso.slice(0, 10) === new Date(nowMs).toISOString().slice(0, 10) ? iso.slice(11, 19) : `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
}

/** agoText: how long before `nowMs`, in words ("850 ms ago", "12 s ago", "4.2 min ago", "3.1 h ago"); a clock ahead of ours reads "just now". */
function agoText(ms: number, nowMs: number): string {
  const d = nowMs - ms;
  if (d < 1000) return d < 0 ? "just now" : `${d} ms ago`;
  if (d < 90_000) return `${Math.round(d / 1000)} s ago`;
  if (d < 5_400_000) return `${(d / 60_000).toFixed(1)} min ago`;
  return `${(d / 3_600_000).toFixed(1)} h ago`;
}

/** reorgText: "blocks 101..103 at 12:01:02, fork 100" ("block 101" when one block was orphaned), or "-" when none. */
export function reorgText(r: z.infer<typeof FollowerReorgSchema> | null, nowMs: number): string {
  if (r === null) return "-";
  const blocks = r.orphanedFrom === r.orphanedTo ? `block ${r.orphanedFrom}` : `blocks ${r.orphanedFrom}..${r.orphanedTo}`;
  return `${blocks} at ${clockText(r.atMs, nowMs)}, fork ${r.forkBlock}`;
}

/**
 * followerTable: the rows of `blockx tasks`'s followers table (FOLLOWER_HEADER first), and a line
 * per stopped follower with its reason (printed under the table: a reason is too long for a cell).
 */
export function followerTable(followers: readonly FollowerStatus[], nowMs: number): { rows: string[][]; stopped: string[] } {
  const rows: string[][] = [[...FOLLOWER_HEADER]];
  const stopped: string[] = [];
  for (const f of followers) {
    const block = (n: number) => (n < 0 ? "-" : String(n));
    rows.push([f.table, f.chain, f.state, block(f.position), block(f.head), String(f.lag), reorgText(f.lastReorg, nowMs), String(f.reorgs), agoText(f.updatedAtMs, nowMs)]);
    if (f.state === "STOPPED") stopped.push(`follower of ${f.table} on ${f.chain} stopped: ${f.stoppedReason ?? "(no reason given)"}`);
  }
  return { rows, stopped };
}
