import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../common/logging/logger";
import { digestOf, FunctionCodeView } from "./function-code-view";
import { FunctionsDirPoller, readFunctionsDir } from "./functions-dir";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("FunctionCodeView", () => {
  test("a snapshot is immutable: a task that pinned epoch 1 keeps the old code after an edit", () => {
    const view = new FunctionCodeView();
    expect(view.current().epoch).toBe(0);
    view.update(new Map([["stats", "v1"]]));
    const pinned = view.current();
    expect(pinned.epoch).toBe(1);
    view.update(new Map([["stats", "v2"]]));
    expect(view.current().epoch).toBe(2);
    expect(pinned.get("stats")!.source).toBe("v1");
    expect(view.current().get("stats")).toEqual({ name: "stats", source: "v2", digest: digestOf("v2") });
  });

  test("the epoch grows on any change (add, edit, remove) and not on an identical set", () => {
    const view = new FunctionCodeView();
    expect(view.update(new Map([["a", "1"]]))).toBe(true);
    expect(view.update(new Map([["a", "1"]]))).toBe(false);
    expect(view.update(new Map([["a", "1"], ["b", "2"]]))).toBe(true);
    expect(view.update(new Map([["b", "2"]]))).toBe(true);
    expect(view.current().epoch).toBe(3);
    expect(view.current().names()).toEqual(["b"]);
    expect(view.current().get("a")).toBeUndefined();
  });

  test("names must be Python identifiers", () => {
    expect(() => new FunctionCodeView().update(new Map([["not-valid", "x"]]))).toThrow("not a Python identifier");
  });
});

describe("FUNCTIONS_DIR", () => {
  test("reads <name>.py files, skips other files and bad names, and the poller follows edits", () => {
    const dir = mkdtempSync(join(tmpdir(), "blockx-fns-"));
    dirs.push(dir);
    writeFileSync(join(dir, "block_stats.py"), "def main(ctx, input):\n    return 1\n");
    writeFileSync(join(dir, "README.md"), "not a function");
    writeFileSync(join(dir, "bad-name.py"), "x");
    const { sources, skipped } = readFunctionsDir(dir);
    expect([...sources.keys()]).toEqual(["block_stats"]);
    expect(skipped).toEqual(["bad-name.py: the name is not a Python identifier"]);

    const view = new FunctionCodeView();
    const poller = new FunctionsDirPoller(dir, view, silentLogger());
    expect(poller.refresh()).toBe(true);
    expect(poller.refresh()).toBe(false);
    writeFileSync(join(dir, "block_stats.py"), "def main(ctx, input):\n    return 2\n");
    expect(poller.refresh()).toBe(true);
    expect(view.current().epoch).toBe(2);
    rmSync(dir, { recursive: true });
    expect(poller.refresh()).toBe(false); // a vanished directory keeps the last snapshot
    expect(view.current().get("block_stats")!.source).toContain("return 2");
  });
});
