import { describe, expect, test } from "bun:test";
import { KNOWN_SCHEMES } from "../../outputs/stores/store-kinds";
import { blockWorkerProfile } from "../core/profile";
import { loadWorkerRuntimeConfigFromEnv } from "./config";

describe("Worker configuration", () => {
  test("a Worker given a URL no store has refuses to start, naming the known schemes and never printing the password", () => {
    let message = "";
    try {
      loadWorkerRuntimeConfigFromEnv(blockWorkerProfile, { TABLE_STORE_URL: "postgress://blockx:hunter2@db/x", BLOCKX_INSECURE: "1" });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain(`TABLE_STORE_URL: no table store has this URL's scheme (known: ${KNOWN_SCHEMES}`);
    expect(message).not.toContain("hunter2");
  });

  test("the dispatcher's config is compiled once from TASK_MAX_INFLIGHT_CALLS, CALL_MAX_ATTEMPTS and EXECUTOR_COUNT", () => {
    const c = loadWorkerRuntimeConfigFromEnv(blockWorkerProfile, { BLOCKX_INSECURE: "1", TASK_MAX_INFLIGHT_CALLS: "16", CALL_MAX_ATTEMPTS: "7", EXECUTOR_COUNT: "3" });
    expect(c.dispatcher).toEqual({ taskMaxInflightCalls: 16, maxInflightCalls: 3 * 256, maxAttempts: 7, retryBackoffBaseMs: 100, retryBackoffMaxMs: 5_000 });
    expect(Object.isFrozen(c.dispatcher)).toBe(true);
  });
});
