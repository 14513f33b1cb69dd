import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../common/logging/logger";
import { functionsFromDir, type FunctionsSource } from "./functions-dir";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

test("a function copied into FUNCTIONS_DIR just before a submit is found at once, not after the next poll", () => {
  // The README's `cp examples/fanout/*.py "$FUNCTIONS_DIR"/ && blockx submit task.json`: the
  // Worker polls every second, so a submit right after the copy named a function it had not seen.
  const dir = mkdtempSync(join(tmpdir(), "blockx-fdir-"));
  const source: FunctionsSource = functionsFromDir(dir, silentLogger());
  cleanups.push(() => source.stop(), () => rmSync(dir, { recursive: true, force: true }));
  expect(source.current()!.names()).toEqual([]);
  writeFileSync(join(dir, "range_summary.py"), "def main(ctx, x):\n    return x\n");
  // Without a name to look for, the snapshot stays what the last poll saw.
  expect(source.current()!.get("range_summary")).toBeUndefined();
  // A task naming it re-reads the directory first.
  expect(source.current("range_summary")!.get("range_summary")?.source).toContain("def main");
  // A name that really is missing stays missing (and costs one directory read).
  expect(source.current("no_such_function")!.get("no_such_function")).toBeUndefined();
});
