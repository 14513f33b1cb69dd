import { describe, expect, test } from "bun:test";
import type { JsonValue } from "../../json/raw-json";
import { normalizeEth } from "./normalize";

describe("normalizeEth", () => {
  test("lowercases hex strings anywhere, keeps other strings, adds removed:false to logs that lack it", () => {
    const input: JsonValue = {
      miner: "0xF39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
      extraData: "0x",
      note: "Not Hex",
      transactions: [{ to: "0xABCDEF0000000000000000000000000000000001", value: "0x1A" }],
      logs: [{ address: "0xAB", topics: ["0xDD"], data: "0x", logIndex: "0x0" }, { address: "0xab", topics: [], data: "0x", logIndex: "0x1", removed: true }],
    };
    expect(normalizeEth(input)).toEqual({
      miner: "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266",
      extraData: "0x",
      note: "Not Hex",
      transactions: [{ to: "0xabcdef0000000000000000000000000000000001", value: "0x1a" }],
      logs: [{ address: "0xab", topics: ["0xdd"], data: "0x", logIndex: "0x0", removed: false }, { address: "0xab", topics: [], data: "0x", logIndex: "0x1", removed: true }],
    });
    expect(normalizeEth(null)).toBeNull();
    expect(normalizeEth(5)).toBe(5);
  });
});
