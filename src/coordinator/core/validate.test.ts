import { describe, expect, test } from "bun:test";
import { ErrorCode } from "../../common/error-code";
import { CoordinatorError, describeFilterCounts } from "./coordinator-error";
import { validateReserveRequest } from "./validate";

describe("validateReserveRequest", () => {
  test("a client that forgets the task id is told so, before any worker is contacted", () => {
    const err = validateReserveRequest("");
    expect(err).toBeInstanceOf(CoordinatorError);
    expect(err?.code).toBe(ErrorCode.ErrInvalidArgument);
    expect(err?.message).toBe("[INVALID_ARGUMENT] task_id is required");
    expect(err?.rawMessage).toBe("task_id is required");
    expect(err?.name).toBe("CoordinatorError");
  });

  test("a task id over 256 characters is refused as INVALID_ARGUMENT naming the bound; 256 pass", () => {
    const err = validateReserveRequest("t".repeat(257));
    expect(err?.code).toBe(ErrorCode.ErrInvalidArgument);
    expect(err?.rawMessage).toBe("task_id: at most 256 characters, got 257");
    expect(validateReserveRequest("t".repeat(256))).toBeNull();
  });

  test("any non-empty task id passes, even whitespace (the Coordinator never interprets task ids)", () => {
    expect(validateReserveRequest("task-42")).toBeNull();
    expect(validateReserveRequest(" ")).toBeNull();
  });
});

describe("describeFilterCounts", () => {
  const zero = {
    total: 0,
    excluded: 0,
    overCpuRedLine: 0,
    overMemoryRedLine: 0,
    overErrorRateRedLine: 0,
    noFreeCapacity: 0,
    breakerOpen: 0,
    heartbeatStale: 0,
  };
  const lines = { cpuRedLine: 0.8, memoryRedLine: 0.7, errorRateRedLine: 0.25 };

  test("one worker is spoken of in the singular and only non-zero reasons are listed", () => {
    expect(describeFilterCounts({ ...zero, total: 1, breakerOpen: 1 }, lines, 5_000)).toBe("1 worker: 1 circuit breaker open");
  });

  test("every reason is listed in the attribution order with the configured thresholds", () => {
    const all = {
      total: 28,
      excluded: 1,
      overCpuRedLine: 2,
      overMemoryRedLine: 3,
      overErrorRateRedLine: 4,
      noFreeCapacity: 5,
      breakerOpen: 6,
      heartbeatStale: 7,
    };
    expect(describeFilterCounts(all, lines, 5_000)).toBe(
      "28 workers: 1 excluded (already tried), 2 over the CPU red line 0.8, 3 over the memory red line 0.7, " +
        "4 over the error-rate red line 0.25, 5 without free capacity, 6 circuit breaker open, 7 heartbeat older than 5000 ms",
    );
  });
});
