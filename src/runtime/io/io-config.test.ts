import { describe, expect, test } from "bun:test";
import { loadEnvConfig } from "../../common/config/env-config";
import { ioConfigFrom, ioVars } from "./io-config";

const load = (env: Record<string, string>) => ioConfigFrom(loadEnvConfig(ioVars, env));

describe("IO configuration", () => {
  test("defaults: 256 MiB cache, singleflight on, window 64, finality 64 (Ethereum mainnet: two epochs), admission 2..32..256 with a queue of 128", () => {
    const { io, localTestFaults, localTestFaultsFile } = load({});
    expect(io).toEqual({
      cacheMaxBytes: 268435456,
      singleflight: true,
      taskWindow: 64,
      finalityDepth: 64,
      headTtlMs: 1000,
      admission: { initialLimit: 32, minLimit: 2, maxLimit: 256, queueSize: 128 },
      readOnly: false,
    });
    expect(localTestFaults).toEqual({ latencyMs: 0, errorRate: 0 });
    expect(localTestFaultsFile).toBe("");
  });

  test("bad values name the variable and the rule", () => {
    expect(() => load({ IO_SINGLEFLIGHT: "yes" })).toThrow("IO_SINGLEFLIGHT");
    expect(() => load({ IO_TASK_WINDOW: "0" })).toThrow("IO_TASK_WINDOW");
    expect(() => load({ LOCALTESTSERVICE_ERROR_RATE: "1.5" })).toThrow("LOCALTESTSERVICE_ERROR_RATE");
    expect(() => load({ IO_ADMISSION_MIN_LIMIT: "64" })).toThrow("IO_ADMISSION_MIN_LIMIT <= IO_ADMISSION_INITIAL_LIMIT <= IO_ADMISSION_MAX_LIMIT, got 64, 32, 256");
  });

  test("0 disables the cache; singleflight can be turned off", () => {
    const { io } = load({ IO_CACHE_MAX_BYTES: "0", IO_SINGLEFLIGHT: "false" });
    expect(io.cacheMaxBytes).toBe(0);
    expect(io.singleflight).toBe(false);
  });
});
