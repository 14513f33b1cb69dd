import { statSync } from "node:fs";
import { resolve } from "node:path";

/** Identity: the unprivileged user executors run as (setpriv --reuid/--regid --clear-groups). */
export interface Identity {
  readonly uid: number;
  readonly gid: number;
  readonly name: string;
}

export interface BlockedAt {
  readonly path: string;
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  /** What `who` lacks there: "search" (x) on a folder on the way, "read" on the end. */
  readonly needs: "search" | "read";
}

/**
 * permits says whether the classic Unix permission bits grant `want` (4 read, 1 search/exec)
 * to `who` on an object of `mode` owned by `uid:gid`. `who` has no supplementary groups
 * (executors are started with --clear-groups); ACLs are not consulted.
 */
export function permits(mode: number, owner: { uid: number; gid: number }, who: Identity, want: 4 | 1 | 5): boolean {
  if (who.uid === 0) return true;
  const bits = who.uid === owner.uid ? (mode >> 6) & 7 : who.gid === owner.gid ? (mode >> 3) & 7 : mode & 7;
  return (bits & want) === want;
}

/**
 * blockingFolder walks from `/` to `path` and returns the first place `who` cannot pass:
 * a folder on the way without search permission, or `path` itself without `end` permission
 * (read: a file, or a folder to list and search; search: a folder to pass through).
 * null when `who` can read `path`. A missing path blocks at itself.
 */
export function blockingFolder(path: string, who: Identity, end: "read" | "search" = "read"): BlockedAt | null {
  const full = resolve(path);
  const parts = full.split("/").filter(Boolean);
  const stops = ["/", ...parts.map((_, i) => "/" + parts.slice(0, i + 1).join("/"))];
  for (let i = 0; i < stops.length; i++) {
    const p = stops[i]!;
    const last = i === stops.length - 1;
    let st;
    try {
      st = statSync(p);
    } catch {
      return { path: p, mode: 0, uid: -1, gid: -1, needs: last ? end : "search" };
    }
    const want = !last || end === "search" ? 1 : st.isDirectory() ? 5 : 4;
    if (!permits(st.mode, st, who, want)) return { path: p, mode: st.mode & 0o7777, uid: st.uid, gid: st.gid, needs: last ? end : "search" };
  }
  return null;
}

/** describeBlock: "/root is mode 0700 owned by 0:0 (no search permission for others)". */
export function describeBlock(b: BlockedAt): string {
  if (b.uid === -1) return `${b.path} does not exist`;
  return `${b.path} is mode 0${b.mode.toString(8).padStart(3, "0")} owned by ${b.uid}:${b.gid} (no ${b.needs} permission for that user)`;
}
