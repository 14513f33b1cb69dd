import { afterEach, describe, expect, test } from "bun:test";
import { procChildren } from "./proc-children";
import { ProcessTreeMemory, statmRssBytes, TREE_WALK_INTERVAL_MS, type ProcReaders } from "./process-tree-memory";

const spawned: ReturnType<typeof Bun.spawn>[] = [];
afterEach(() => {
  for (const p of spawned.splice(0)) p.kill("SIGKILL");
});

/** A real tree: a shell with two sleeping children; resolves once /proc shows both. */
async function shellWithTwoChildren(): Promise<{ root: number; children: number[] }> {
  const sh = Bun.spawn(["sh", "-c", "sleep 60 & sleep 60 & wait"]);
  spawned.push(sh);
  for (let i = 0; i < 200; i++) {
    const children = procChildren.childrenOf(sh.pid);
    if (children.length === 2) return { root: sh.pid, children };
    await Bun.sleep(10);
  }
  throw new Error("the shell's two children did not show up in /proc");
}

/** The real /proc readers, counting the children lookups (a walk) and the reads per pid. */
function counting(): ProcReaders & { walks: number[]; reads: number[] } {
  const walks: number[] = [];
  const reads: number[] = [];
  return {
    walks,
    reads,
    childrenOf: (pid) => {
      walks.push(pid);
      return procChildren.childrenOf(pid);
    },
    rssBytesOf: (pid) => {
      reads.push(pid);
      return statmRssBytes(pid);
    },
  };
}

describe("ProcessTreeMemory", () => {
  test("counts the root and everything under it; walks the tree at most every interval and reads only its processes in between", async () => {
    const { root, children } = await shellWithTwoChildren();
    const proc = counting();
    const memory = new ProcessTreeMemory(root, proc);
    const first = memory.rssBytes(0)!;
    const each = [root, ...children].map((p) => statmRssBytes(p)!);
    expect(first).toBeGreaterThan(Math.max(...each)); // all three counted
    expect(new Set(proc.walks)).toEqual(new Set([root, ...children]));

    proc.walks.length = 0;
    proc.reads.length = 0;
    expect(memory.rssBytes(TREE_WALK_INTERVAL_MS - 1)).toBeGreaterThan(0);
    expect(proc.walks).toEqual([]); // within the interval: no children looked up
    expect(new Set(proc.reads)).toEqual(new Set([root, ...children]));

    memory.rssBytes(TREE_WALK_INTERVAL_MS);
    expect(proc.walks.length).toBe(3); // the interval has passed: walked again
  });

  test("a process of the last walk that is gone makes the next read walk again at once; a root that is gone reads null", async () => {
    const { root, children } = await shellWithTwoChildren();
    const proc = counting();
    const memory = new ProcessTreeMemory(root, proc);
    memory.rssBytes(0);
    process.kill(children[0]!, "SIGKILL");
    for (let i = 0; i < 200 && statmRssBytes(children[0]!) !== null; i++) await Bun.sleep(10); // reaped by the shell
    proc.walks.length = 0;
    proc.reads.length = 0;
    expect(memory.rssBytes(1)).toBeGreaterThan(0);
    expect(proc.walks.length).toBeGreaterThan(0); // walked, within the interval
    proc.walks.length = 0;
    memory.rssBytes(2);
    expect(proc.walks).toEqual([]); // and the new walk holds again

    spawned[0]!.kill("SIGKILL");
    await spawned[0]!.exited;
    expect(memory.rssBytes(3)).toBeNull();
  });

  test("a process that appears between walks counts from the next walk on", () => {
    // Fake /proc: pid 1 with child 2; then 3 appears under 1.
    const tree = new Map<number, number[]>([[1, [2]], [2, []]]);
    const memory = new ProcessTreeMemory(1, { childrenOf: (p) => tree.get(p) ?? [], rssBytesOf: (p) => (tree.has(p) ? 1000 : null) });
    expect(memory.rssBytes(0)).toBe(2000);
    tree.set(1, [2, 3]).set(3, []);
    expect(memory.rssBytes(TREE_WALK_INTERVAL_MS - 1)).toBe(2000); // not looked for yet
    expect(memory.rssBytes(TREE_WALK_INTERVAL_MS)).toBe(3000);
  });
});
