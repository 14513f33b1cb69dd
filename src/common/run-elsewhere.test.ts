import { expect, test } from "bun:test";
import { parseRunElsewhere, runElsewhereMessage } from "./run-elsewhere";

test("a run-elsewhere refusal reads back to where the run is, for both states, with or without the code's prefix", () => {
  for (const r of [
    { taskId: "backfill-1", workerAddr: "10.0.0.7:7000", generation: 3, state: "RUNNING" },
    { taskId: "t", workerAddr: "[::1]:50051", generation: 1, state: "SUCCEEDED" },
  ]) {
    const m = runElsewhereMessage(r);
    expect(parseRunElsewhere(m)).toEqual(r);
    expect(parseRunElsewhere(`[TASK_RUN_ELSEWHERE] ${m}`)).toEqual(r);
  }
  expect(parseRunElsewhere("task t is running late")).toBeNull();
  expect(parseRunElsewhere("no slot")).toBeNull();
});
