import { describe, expect, test } from "bun:test";
import { exactInt, integerDigits, isExactInt, parseExactJson } from "./exact-json";

const BIG = (2n ** 255n + 1n).toString();
const NEG = (-(2n ** 63n) - 1n).toString();

describe("parseExactJson", () => {
  test("integers beyond 2^53 (2^255+1, -(2^63)-1) keep every digit through a parse and a stringify", () => {
    const text = `{"a":${BIG},"b":[${NEG},7,1.5,1e300],"c":"${BIG}"}`;
    const v = parseExactJson(text) as { a: unknown; b: unknown[]; c: string };
    expect(isExactInt(v.a)).toBe(true);
    expect(isExactInt(v.b[0])).toBe(true);
    expect(v.b.slice(1)).toEqual([7, 1.5, 1e300]);
    expect(v.c).toBe(BIG); // a string of digits stays a string
    expect(JSON.stringify(v)).toBe(text.replace("1e300", "1e+300"));
  });

  test("safe integers stay numbers; 2^53 + 1 does not", () => {
    expect(parseExactJson("[9007199254740991, -9007199254740991]")).toEqual([9007199254740991, -9007199254740991]);
    const [v] = parseExactJson("[9007199254740993]") as unknown[];
    expect(isExactInt(v)).toBe(true);
    expect(integerDigits(v as never)).toBe("9007199254740993");
  });

  test("exactInt takes digits only", () => {
    expect(exactInt("12")).toBe(12);
    expect(integerDigits(exactInt(BIG))).toBe(BIG);
    expect(() => exactInt("1.5")).toThrow("not an integer literal");
    expect(() => exactInt("0x10")).toThrow("not an integer literal");
  });
});
