import type { TableWrite } from "../../src/outputs/stores/table-store";

const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);
const scope = (table: string, from: number, to: number, tag: string): TableWrite => ({ kind: "replaceBlock", table, scope: { chain: "eth", fromBlock: from, toBlock: to }, rows: range(from, to).map((block) => ({ block, tag })) });

/**
 * Crash scenarios of the Parquet store: what is written first (`setup`, completed), then the one
 * commit that is killed (`write`), and the kill points it passes.
 */
export const CRASH_SCENARIOS: Record<string, { setup: TableWrite[][]; write: TableWrite[]; points: string[] }> = {
  // A new scope: one rename.
  newScope: { setup: [[scope("t", 0, 4, "old")]], write: [scope("t", 5, 9, "new")], points: ["afterStage", "afterIntent", "op:0"] },
  // The same scope again (a retry): one rename over the earlier file.
  sameScope: { setup: [[scope("t", 0, 4, "old")]], write: [scope("t", 0, 4, "new")], points: ["afterStage", "afterIntent", "op:0"] },
  // A wider scope replacing two files and a block table of another table in the same call: an exchange of the chain's folder, then a rename.
  wider: {
    setup: [[scope("t", 0, 4, "old")], [scope("t", 5, 9, "old")], [scope("u", 0, 0, "old")]],
    write: [scope("t", 0, 9, "new"), scope("u", 0, 0, "new")],
    points: ["afterStage", "afterIntent", "op:0", "swapBuilt", "swapExchanged", "op:1", "op:2"],
  },
  // A scope that now has no rows: one unlink.
  emptied: { setup: [[scope("t", 0, 4, "old")], [scope("t", 5, 9, "old")]], write: [{ kind: "replaceBlock", table: "t", scope: { chain: "eth", fromBlock: 5, toBlock: 9 }, rows: [] }], points: ["afterStage", "afterIntent", "op:0"] },
};
