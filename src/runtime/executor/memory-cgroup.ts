import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * Kernel-enforced executor memory (issue 51 item 3): each executor gets a memory cgroup of its own
 * whose limit is EXECUTOR_MEMORY_LIMIT_MB, so an allocation past the limit is refused or OOM-killed
 * by the kernel at once, not found by the pool's next RSS sample (50 ms later: a burst passes). The
 * pool's sampling stays: it counts the tmpfs files of the sandbox's scratch and /tmp the same way
 * everywhere, and is what enforces the limit where no cgroup can be had.
 *
 * Where the Worker may make cgroups:
 * - cgroup v2 (the unified hierarchy with the memory controller in the Worker's own cgroup's
 *   cgroup.controllers: systemd's `Delegate=yes`, as the shipped units set): the Worker moves itself
 *   into a leaf `<own>/blockx-worker-<pid>` (a cgroup with children may hold no processes), enables
 *   `+memory` for its children, and makes `<own>/blockx-executors-<pid>/<id>` with memory.max and
 *   memory.swap.max = 0; kills are counted in memory.events (`oom_kill`).
 * - cgroup v1 (a `memory` hierarchy the Worker can write, e.g. as root): `<own>/blockx-executors-<pid>/<id>`
 *   with memory.limit_in_bytes (and memory.memsw.limit_in_bytes, which bounds swap, where present);
 *   kills in memory.oom_control (`oom_kill`).
 * - neither: no cgroup; EXECUTOR_MEMORY_CGROUP=auto says so once at start (the limit is then the
 *   pool's sampling only), =required refuses to start.
 *
 * The executor joins its cgroup when its Hello is accepted, before any call is sent to it: user
 * code runs only in calls, so everything it allocates is charged to the executor's cgroup.
 */
export type MemoryCgroupMode = "auto" | "off" | "required";

export interface CgroupFs {
  readFile(path: string): string;
  writeFile(path: string, text: string): void;
  mkdir(path: string): void;
  rmdir(path: string): void;
  exists(path: string): boolean;
}

const REAL_FS: CgroupFs = {
  readFile: (p) => readFileSync(p, "utf8"),
  writeFile: (p, t) => writeFileSync(p, t),
  mkdir: (p) => mkdirSync(p, { recursive: true }),
  rmdir: (p) => rmdirSync(p),
  exists: (p) => existsSync(p),
};

/** Where the Worker's memory cgroups go: which version, and the folder its executors' cgroups are made in. */
export interface CgroupPlace {
  readonly version: 1 | 2;
  /** The folder (in cgroupfs) holding one cgroup per executor. */
  readonly base: string;
}

/** What /proc/self/mountinfo and /proc/self/cgroup say, for findCgroupPlace. */
export interface CgroupProbe {
  readonly mountinfo: string;
  readonly selfCgroup: string;
  readonly pid: number;
  /** Tells this pool's folder from another pool's of the same process (tests run several): `blockx-executors-<pid>-<pool>`. */
  readonly pool?: number;
}

/**
 * findCgroupPlace decides where executor cgroups can be made, or says why none can (null place).
 * v2 is preferred where its memory controller is available to the Worker's cgroup.
 */
export function findCgroupPlace(probe: CgroupProbe, fs: CgroupFs = REAL_FS): { place: CgroupPlace | null; why: string } {
  const mounts = probe.mountinfo.split("\n").flatMap((line) => {
    // 36 35 0:31 / /sys/fs/cgroup/memory rw,relatime shared:13 - cgroup cgroup rw,memory
    const [left, right] = line.split(" - ");
    if (!left || !right) return [];
    const l = left.split(" ");
    const r = right.split(" ");
    return [{ root: l[3]!, mountPoint: l[4]!, fstype: r[0]!, options: (r[2] ?? "").split(",") }];
  });
  const lines = probe.selfCgroup.split("\n").filter((l) => l.trim() !== "");
  const reasons: string[] = [];
  // v2: "0::/path"
  const unified = lines.find((l) => l.startsWith("0::"));
  const v2mount = mounts.find((m) => m.fstype === "cgroup2");
  if (unified && v2mount) {
    const own = join(v2mount.mountPoint, relativeTo(v2mount.root, unified.slice(3)));
    const controllers = safeRead(fs, join(own, "cgroup.controllers")).split(/\s+/);
    if (controllers.includes("memory")) {
      try {
        const base = delegateV2(own, probe.pid, poolSuffix(probe), fs);
        return { place: { version: 2, base }, why: `cgroup v2 at ${own}` };
      } catch (e) {
        reasons.push(`cgroup v2 at ${own} has the memory controller, but the Worker cannot use it (${(e as Error).message}): give the unit Delegate=yes`);
      }
    } else {
      reasons.push(`cgroup v2 at ${own} has no memory controller (cgroup.controllers: ${controllers.join(" ") || "none"}; systemd's Delegate=yes gives one)`);
    }
  } else {
    reasons.push("no cgroup v2 hierarchy for this process");
  }
  // v1: "N:memory:/path" (or a list of controllers including memory)
  const v1line = lines.find((l) => l.split(":")[1]?.split(",").includes("memory"));
  const v1mount = mounts.find((m) => m.fstype === "cgroup" && m.options.includes("memory"));
  if (v1line && v1mount) {
    const own = join(v1mount.mountPoint, relativeTo(v1mount.root, v1line.split(":").slice(2).join(":")));
    const base = join(own, `blockx-executors-${probe.pid}${poolSuffix(probe)}`);
    try {
      fs.mkdir(base);
      return { place: { version: 1, base }, why: `cgroup v1 memory hierarchy at ${own}` };
    } catch (e) {
      reasons.push(`the cgroup v1 memory hierarchy at ${own} is not writable by this process (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  } else {
    reasons.push("no cgroup v1 memory hierarchy");
  }
  return { place: null, why: reasons.join("; ") };
}

/**
 * delegateV2 makes `own` a parent of memory cgroups and returns the folder for this Worker's
 * executors: the Worker moves itself into the leaf `own/blockx-worker-<pid>` (a cgroup whose
 * children have controllers may hold no processes of its own), then `+memory` is enabled for
 * `own`'s children and for `own/blockx-executors-<pid>`'s. Only its own process moves: a cgroup
 * that holds others (a Worker without a unit of its own) refuses the controller (EBUSY), and the
 * reason says to give it one.
 */
function delegateV2(own: string, pid: number, suffix: string, fs: CgroupFs): string {
  const subtree = safeRead(fs, join(own, "cgroup.subtree_control")).split(/\s+/);
  if (!subtree.includes("memory")) {
    const leaf = join(own, `blockx-worker-${pid}`);
    fs.mkdir(leaf);
    fs.writeFile(join(leaf, "cgroup.procs"), String(pid));
    try {
      fs.writeFile(join(own, "cgroup.subtree_control"), "+memory");
    } catch (e) {
      throw new Error(`enabling +memory in ${own}/cgroup.subtree_control: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message} (other processes in the Worker's cgroup?)`);
    }
  }
  const base = join(own, `blockx-executors-${pid}${suffix}`);
  fs.mkdir(base);
  if (!safeRead(fs, join(base, "cgroup.subtree_control")).split(/\s+/).includes("memory")) fs.writeFile(join(base, "cgroup.subtree_control"), "+memory");
  return base;
}

function poolSuffix(probe: CgroupProbe): string {
  return probe.pool === undefined ? "" : `-${probe.pool}`;
}

function relativeTo(mountRoot: string, path: string): string {
  const p = path.trim();
  if (mountRoot === "/" || mountRoot === "") return p;
  return p.startsWith(mountRoot) ? p.slice(mountRoot.length) || "/" : p;
}

function safeRead(fs: CgroupFs, path: string): string {
  try {
    return fs.readFile(path).trim();
  } catch {
    return "";
  }
}

/** ExecutorCgroup: one executor's memory cgroup. */
export class ExecutorCgroup {
  private constructor(
    private readonly place: CgroupPlace,
    readonly dir: string,
    private readonly fs: CgroupFs,
  ) {}

  /** make creates the cgroup with its limit (an existing one, left by a crashed Worker, is reused). */
  static make(place: CgroupPlace, executorId: string, limitBytes: number, fs: CgroupFs = REAL_FS): ExecutorCgroup {
    const dir = join(place.base, executorId.replace(/[^A-Za-z0-9_.-]/g, "_"));
    fs.mkdir(dir);
    const g = new ExecutorCgroup(place, dir, fs);
    if (place.version === 2) {
      fs.writeFile(join(dir, "memory.max"), String(limitBytes));
      if (fs.exists(join(dir, "memory.swap.max"))) fs.writeFile(join(dir, "memory.swap.max"), "0");
    } else {
      fs.writeFile(join(dir, "memory.limit_in_bytes"), String(limitBytes));
      // memsw bounds memory + swap; it must stay >= the memory limit, so it is written after it.
      if (fs.exists(join(dir, "memory.memsw.limit_in_bytes"))) fs.writeFile(join(dir, "memory.memsw.limit_in_bytes"), String(limitBytes));
    }
    return g;
  }

  /** join moves processes into the cgroup (those that exited meanwhile are skipped); how many moved (0 when the cgroup is gone). */
  join(pids: readonly number[]): number {
    let moved = 0;
    for (const pid of pids) {
      try {
        this.fs.writeFile(join(this.dir, "cgroup.procs"), String(pid));
        moved++;
      } catch {
        // gone already
      }
    }
    return moved;
  }

  /** oomKills: how many of its processes the kernel killed at the limit (0 when that cannot be read). */
  oomKills(): number {
    const text = safeRead(this.fs, join(this.dir, this.place.version === 2 ? "memory.events" : "memory.oom_control"));
    const m = /(?:^|\n)oom_kill (\d+)/.exec(text);
    return m ? Number(m[1]) : 0;
  }

  /** remove deletes the cgroup once its processes are gone (a later try may succeed: the kernel frees it after they exit). */
  remove(): boolean {
    try {
      this.fs.rmdir(this.dir);
      return true;
    } catch {
      return !this.fs.exists(this.dir);
    }
  }
}

/**
 * sweepStaleCgroups removes what Workers that died without closing their pool (SIGKILL, a crash)
 * left beside this one's folder: `blockx-executors-<pid>` of a pid no longer alive, with its
 * executors' cgroups (empty once their processes are gone; one still in use is left). How many went.
 */
export function sweepStaleCgroups(place: CgroupPlace, alive: (pid: number) => boolean = pidAlive): number {
  const parent = dirname(place.base);
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return 0;
  }
  for (const name of names) {
    const m = /^blockx-(?:executors|worker)-(\d+)(?:-\d+)?$/.exec(name);
    if (!m || join(parent, name) === place.base || alive(Number(m[1]))) continue;
    const dir = join(parent, name);
    try {
      for (const child of readdirSync(dir, { withFileTypes: true })) if (child.isDirectory()) rmdirSync(join(dir, child.name));
      rmdirSync(dir);
      removed++;
    } catch {
      // processes still in it, or not ours to remove
    }
  }
  return removed;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

let pools = 0;

/** probeSelf: what this process's /proc says, for findCgroupPlace; `pool`: a new number for each pool that asks. */
export function probeSelf(forPool = false): CgroupProbe {
  return { mountinfo: safeRead(REAL_FS, "/proc/self/mountinfo"), selfCgroup: safeRead(REAL_FS, "/proc/self/cgroup"), pid: process.pid, ...(forPool ? { pool: ++pools } : {}) };
}
