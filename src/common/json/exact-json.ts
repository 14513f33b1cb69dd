/**
 * Exact integers in JSON. Python's json writes an integer of any size as its digits, but
 * JavaScript's JSON.parse turns 2**255+1 into 5.78960446186581e+76. parseExactJson keeps every
 * integer literal beyond Number.MAX_SAFE_INTEGER as an ExactInt: a JSON.rawJSON value, which
 * JSON.stringify writes back as the same digits, so such a value travels from the executor through
 * the Worker, the table store and the task result without loss. Smaller integers and every
 * fraction stay plain numbers.
 */

/** ExactInt: an integer beyond 2^53 held as its JSON digits (a frozen JSON.rawJSON object). */
export type ExactInt = { readonly rawJSON: string };

interface RawJsonApi {
  rawJSON(text: string): ExactInt;
  isRawJSON(v: unknown): boolean;
}
const RAW = JSON as unknown as RawJsonApi;

/** The most digits an exact integer may have: 78 covers 2^256 − 1 (NUMERIC(78,0)). */
export const MAX_EXACT_DIGITS = 78;

const INTEGER_LITERAL = /^-?(0|[1-9][0-9]*)$/;
/** Any integer beyond 2^53 has 16 or more digits; text without such a run parses the fast way. */
const LONG_DIGIT_RUN = /[0-9]{16}/;

/** isExactInt: v is an ExactInt (an integer that JSON.parse could not hold as a number). */
export function isExactInt(v: unknown): v is ExactInt {
  return typeof v === "object" && v !== null && RAW.isRawJSON(v);
}

/**
 * exactInt makes the value of an integer given as decimal digits: a plain number when it is safe,
 * an ExactInt otherwise. Throws on text that is not an integer literal.
 */
export function exactInt(digits: string): number | ExactInt {
  if (!INTEGER_LITERAL.test(digits)) throw new RangeError(`not an integer literal: ${JSON.stringify(digits.slice(0, 90))}`);
  const n = Number(digits);
  return Number.isSafeInteger(n) ? n : RAW.rawJSON(digits);
}

/** integerDigits: the decimal digits of an integer value (a safe integer or an ExactInt). */
export function integerDigits(v: number | ExactInt): string {
  return typeof v === "number" ? String(v) : v.rawJSON;
}

function revive(this: unknown, _key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value !== "number" || Number.isSafeInteger(value)) return value;
  const src = context?.source;
  return src !== undefined && INTEGER_LITERAL.test(src) ? RAW.rawJSON(src) : value;
}

/** parseExactJson is JSON.parse that keeps integers beyond 2^53 exact (as ExactInt). */
export function parseExactJson(text: string): unknown {
  return LONG_DIGIT_RUN.test(text) ? JSON.parse(text, revive as (k: string, v: unknown) => unknown) : JSON.parse(text);
}
