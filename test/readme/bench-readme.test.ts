/**
 * bench/README.md is the reference of the benchmarks: its table (or its list of helpers) names every
 * file under bench/, so a new bench cannot land without its row, and it opens with that table.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const BENCH = join(import.meta.dir, "..", "..", "bench");
const README = readFileSync(join(BENCH, "README.md"), "utf8");

describe("bench/README.md", () => {
  test("names every file under bench/", () => {
    const files = (readdirSync(BENCH, { recursive: true }) as string[]).filter((f) => /\.(ts|py|sh|mjs|patch)$/.test(f));
    expect(files.length).toBeGreaterThan(20);
    const missing = files.filter((f) => !README.includes(f) && !README.includes(f.split("/").pop()!));
    expect(missing).toEqual([]);
  });

  test("opens with the table of every benchmark: command, same-run baseline, latest figures with a date, aim", () => {
    const first = README.indexOf("\n## ");
    expect(README.slice(first + 1).startsWith("## Every benchmark\n")).toBe(true);
    const header = README.split("\n").find((l) => l.startsWith("| benchmark |"));
    expect(header).toBe("| benchmark | command | compared against, in the same run | latest figures (date) | aim: met? |");
    const rows = README.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| benchmark |") && !l.startsWith("| ---"));
    expect(rows.length).toBeGreaterThan(20);
    for (const row of rows) {
      const cells = row.split(" | ");
      expect(cells.length).toBe(5);
      expect(row).toMatch(/\(20\d\d-\d\d-\d\d|20\d\d-\d\d-\d\d/); // every figure has its date
    }
  });
});
