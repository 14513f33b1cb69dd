/**
 * parquet-crash-child.ts ROOT SCENARIO POINT: one commit of a crash scenario (parquet-tables.test.ts)
 * into the dataset at ROOT, by a ParquetTables of this process, which SIGKILLs itself at POINT
 * (afterStage, afterIntent, op:<i> before the i-th file operation, swapBuilt, swapExchanged).
 * Exit code 0: POINT was never reached (the commit finished).
 */
import { ParquetTables } from "../../src/outputs/stores/parquet-tables";
import { CRASH_SCENARIOS } from "./parquet-crash-scenarios";

const [root, scenario, point] = process.argv.slice(2) as [string, string, string];
const tables = new ParquetTables(root);
let op = 0;
const die = (at: string) => {
  if (at === point) process.kill(process.pid, "SIGKILL");
};
tables.hooks = {
  afterStage: () => die("afterStage"),
  afterIntent: () => die("afterIntent"),
  before: () => die(`op:${op++}`),
  step: (name) => die(name),
};
tables.commit(CRASH_SCENARIOS[scenario]!.write);
tables.close();
