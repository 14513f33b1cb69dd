/** The flags `submit` reads to build a task (a task file's fields are overridden by them). */
export const TASK_FLAGS = {
  function: "value",
  entry: "value",
  blocks: "value",
  chain: "value",
  "bundle-size": "value",
  inputs: "value",
  table: "value",
  append: "bool",
  return: "bool",
  "task-id": "value",
  "task-timeout-ms": "value",
} as const;

export const TASK_FLAGS_HELP = [
  "  --function FILE|NAME   a Python file (sent inline) or a function name from FUNCTIONS_DIR",
  "  --entry NAME           entry function (default main)",
  "  --blocks A..B          one call per block A..B inclusive (block_table config)",
  "  --bundle-size N        with --blocks: one call per N blocks (block_bundle config)",
  "  --chain NAME           chain of --blocks (default ethereum, the local test chain)",
  "  --inputs JSON|@FILE    a JSON array: one call per element (inputs config)",
  "  --table NAME           write rows to a table (block_table_write with --blocks, normal_table_write with --inputs or --append)",
  "  --return               return the values to the caller (return_value)",
  "  --task-id ID           default: generated",
  "  --task-timeout-ms N    the task's timeout (0 = the Worker's default, 300000)",
].join("\n");
