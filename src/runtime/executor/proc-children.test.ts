import { afterEach, describe, expect, test } from "bun:test";
import { ProcChildren } from "./proc-children";

const spawned: ReturnType<typeof Bun.spawn>[] = [];
afterEach(() => {
  for (const p of spawned.splice(0)) p.kill("SIGKILL");
});

describe("ProcChildren", () => {
  test("the /proc scan by parent pid (kernels without CONFIG_PROC_CHILDREN) finds the same children as the children file", () => {
    const a = Bun.spawn(["sleep", "30"]);
    const b = Bun.spawn(["sleep", "30"]);
    spawned.push(a, b);
    const scanned = new ProcChildren({ forceScan: true }).childrenOf(process.pid);
    expect(scanned).toContain(a.pid);
    expect(scanned).toContain(b.pid);
    // Where the kernel has the children file, both ways agree on these two.
    const direct = new ProcChildren().childrenOf(process.pid);
    expect(direct).toContain(a.pid);
    expect(direct).toContain(b.pid);
    expect(new ProcChildren({ forceScan: true }).childrenOf(a.pid)).toEqual([]);
  });

  test("one scan serves the lookups made within its lifetime; a later lookup scans again", () => {
    let now = 0;
    const children = new ProcChildren({ forceScan: true, nowMs: () => now });
    expect(children.childrenOf(process.pid)).not.toContain(-1);
    const c = Bun.spawn(["sleep", "30"]);
    spawned.push(c);
    expect(children.childrenOf(process.pid)).not.toContain(c.pid); // the cached scan predates it
    now += 1000;
    expect(children.childrenOf(process.pid)).toContain(c.pid);
  });
});
