import { describe, expect, test } from "bun:test";
import type { JsonValue } from "../../runtime/json/raw-json";
import { IoPrefetchPlan, jsonEqual, type IoRequestShape } from "./io-prefetch-plan";

const BACKEND = "localtestservice";
const OP = "eth_getBlockByNumber";

function blockInput(blockNumber: number, chain = "ethereum"): JsonValue {
  return { chain, blockNumber };
}

/** What `ctx.io('localtestservice','eth_getBlockByNumber', {'chain': input['chain'], 'number': input['blockNumber']})` asks. */
function blockRequest(input: JsonValue): IoRequestShape {
  const { chain, blockNumber } = input as { chain: string; blockNumber: number };
  return { backend: BACKEND, op: OP, params: { chain, number: blockNumber } };
}

function request(params: JsonValue, op = OP, backend = BACKEND): IoRequestShape {
  return { backend, op, params };
}

/** A plan that has seen two block calls and is confirmed. */
function confirmedBlockPlan(): IoPrefetchPlan {
  const plan = new IoPrefetchPlan();
  plan.observe(blockInput(1), blockRequest(blockInput(1)));
  plan.observe(blockInput(2), blockRequest(blockInput(2)));
  expect(plan.state).toBe("confirmed");
  return plan;
}

function nestedArrays(depth: number, inner: JsonValue): JsonValue {
  let value = inner;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe("IoPrefetchPlan: learning and confirming", () => {
  test("learns the block-task shape from one call, confirms on a second, then predicts a third exactly", () => {
    const plan = new IoPrefetchPlan();
    expect(plan.state).toBe("learning");
    plan.observe(blockInput(1234), blockRequest(blockInput(1234)));
    expect(plan.state).toBe("learning");
    plan.observe(blockInput(1235), blockRequest(blockInput(1235)));
    expect(plan.state).toBe("confirmed");
    expect(plan.predict(blockInput(99, "polygon"))).toEqual({
      backend: BACKEND,
      op: OP,
      params: { chain: "polygon", number: 99 },
    });
  });

  test("no prediction while learning, before or after the first observation", () => {
    const plan = new IoPrefetchPlan();
    expect(plan.predict(blockInput(1))).toBeNull();
    plan.observe(blockInput(1), blockRequest(blockInput(1)));
    expect(plan.state).toBe("learning");
    expect(plan.predict(blockInput(1))).toBeNull();
    expect(plan.predict(blockInput(2))).toBeNull();
  });

  test("a scalar input is referenced at the root: 17 as a value in params", () => {
    const plan = new IoPrefetchPlan();
    plan.observe(17, request({ chain: "ethereum", call: 17 }));
    plan.observe(18, request({ chain: "ethereum", call: 18 }));
    expect(plan.state).toBe("confirmed");
    expect(plan.predict(42)).toEqual(request({ chain: "ethereum", call: 42 }));
  });

  test("a scalar input x used as `number`, and a string scalar input", () => {
    const numbers = new IoPrefetchPlan();
    numbers.observe(5, request({ chain: "ethereum", number: 5 }));
    numbers.observe(6, request({ chain: "ethereum", number: 6 }));
    expect(numbers.predict(7)).toEqual(request({ chain: "ethereum", number: 7 }));

    const strings = new IoPrefetchPlan();
    strings.observe("0xabc", request({ address: "0xabc", tag: "latest" }, "eth_getBalance"));
    strings.observe("0xdef", request({ address: "0xdef", tag: "latest" }, "eth_getBalance"));
    expect(strings.predict("0x123")).toEqual(request({ address: "0x123", tag: "latest" }, "eth_getBalance"));
  });

  test("the hex form of a block number is learned: '0x4d2' from 1234", () => {
    const plan = new IoPrefetchPlan();
    plan.observe(blockInput(1234), request({ chain: "ethereum", number: "0x4d2" }));
    plan.observe(blockInput(255), request({ chain: "ethereum", number: "0xff" }));
    expect(plan.state).toBe("confirmed");
    expect(plan.predict(blockInput(0))).toEqual(request({ chain: "ethereum", number: "0x0" }));
    expect(plan.predict(blockInput(4096))).toEqual(request({ chain: "ethereum", number: "0x1000" }));
  });

  test("the hex form inside array params: ctx.rpc.call('eth_getBlockByNumber', hex(n), True)", () => {
    const plan = new IoPrefetchPlan();
    plan.observe(blockInput(1234), request(["0x4d2", true]));
    plan.observe(blockInput(1235), request(["0x4d3", true]));
    expect(plan.state).toBe("confirmed");
    expect(plan.predict(blockInput(16))).toEqual(request(["0x10", true]));
  });

  test("hex that is not the canonical form (upper case, leading zeros) is a constant, not a reference", () => {
    for (const notCanonical of ["0x4D2", "0x04d2", "4d2"]) {
      const plan = new IoPrefetchPlan({ maxFailedConfirmations: 1 });
      plan.observe(blockInput(1234), request([notCanonical, true]));
      // No reference: the request does not depend on the input, so it is a failed confirmation.
      expect(plan.state).toBe("off");
    }
  });

  test("the hex form is only for non-negative safe integers", () => {
    const plan = new IoPrefetchPlan({ maxFailedConfirmations: 1 });
    // -1 has no RPC quantity form; "-0x1" must not be taken for it.
    plan.observe({ n: -1 }, request(["-0x1"]));
    expect(plan.state).toBe("off");
    const fractional = new IoPrefetchPlan({ maxFailedConfirmations: 1 });
    fractional.observe({ n: 1.5 }, request(["0x1.8"]));
    expect(fractional.state).toBe("off");
  });

  test("a hex reference needs a non-negative safe integer in the new input, else null", () => {
    const plan = new IoPrefetchPlan();
    plan.observe(blockInput(1234), request(["0x4d2", true]));
    plan.observe(blockInput(1235), request(["0x4d3", true]));
    expect(plan.predict(blockInput(-1))).toBeNull();
    expect(plan.predict(blockInput(1.5))).toBeNull();
    expect(plan.predict(blockInput(2 ** 53))).toBeNull();
    expect(plan.predict({ chain: "ethereum", blockNumber: "1234" })).toBeNull();
  });

  test("constants are kept (booleans, null, other strings and numbers) and 1 is not confused with true", () => {
    const plan = new IoPrefetchPlan();
    const params = (n: number): JsonValue => ({ full: true, hydrated: false, tag: "latest", nothing: null, limit: 100, n, list: [] });
    plan.observe({ n: 1, flag: true }, request(params(1)));
    plan.observe({ n: 2, flag: true }, request(params(2)));
    expect(plan.state).toBe("confirmed");
    // `full: true` stayed a constant even though the input had a `true` and a `1` in it.
    expect(plan.predict({ n: 3, flag: false })).toEqual(request(params(3)));
  });

  test("a boolean input leaf is never a reference, and true in params does not match 1 in the input", () => {
    const plan = new IoPrefetchPlan({ maxFailedConfirmations: 1 });
    plan.observe({ n: 1, flag: true }, request({ full: true, on: true }));
    expect(plan.state).toBe("off");
    const numberVsString = new IoPrefetchPlan({ maxFailedConfirmations: 1 });
    numberVsString.observe({ n: 1 }, request({ n: "1" }));
    expect(numberVsString.state).toBe("off");
  });

  test("an empty string is never a reference", () => {
    const plan = new IoPrefetchPlan({ maxFailedConfirmations: 1 });
    plan.observe({ s: "" }, request({ s: "" }));
    expect(plan.state).toBe("off");
  });

  test("ambiguous input: the first path in depth-first key order is taken", () => {
    const plan = new IoPrefetchPlan();
    plan.observe({ a: 5, b: 5 }, request({ number: 5 }));
    plan.observe({ a: 6, b: 7 }, request({ number: 6 }));
    expect(plan.state).toBe("confirmed");
    expect(plan.predict({ a: 10, b: 20 })).toEqual(request({ number: 10 }));

    const nested = new IoPrefetchPlan();
    nested.observe({ outer: { inner: 5 }, later: 5 }, request([5]));
    nested.observe({ outer: { inner: 6 }, later: 7 }, request([6]));
    expect(nested.state).toBe("confirmed");
  });

  test("a wrong first template (ambiguous input) is re-learned and confirms later", () => {
    const plan = new IoPrefetchPlan();
    // The function uses b; with a == b the plan guesses a.
    plan.observe({ a: 5, b: 5 }, request({ number: 5 }));
    plan.observe({ a: 6, b: 7 }, request({ number: 7 }));
    expect(plan.state).toBe("learning");
    plan.observe({ a: 8, b: 9 }, request({ number: 9 }));
    expect(plan.state).toBe("confirmed");
    expect(plan.predict({ a: 1, b: 2 })).toEqual(request({ number: 2 }));
  });

  test("a different backend or op fails the confirmation", () => {
    const otherOp = new IoPrefetchPlan({ maxFailedConfirmations: 1 });
    otherOp.observe(blockInput(1), blockRequest(blockInput(1)));
    otherOp.observe(blockInput(2), { ...blockRequest(blockInput(2)), op: "eth_getLogs" });
    expect(otherOp.state).toBe("off");
    const otherBackend = new IoPrefetchPlan({ maxFailedConfirmations: 1 });
    otherBackend.observe(blockInput(1), blockRequest(blockInput(1)));
    otherBackend.observe(blockInput(2), { ...blockRequest(blockInput(2)), backend: "other" });
    expect(otherBackend.state).toBe("off");
  });

  test("key order in params does not matter for confirmation", () => {
    const plan = new IoPrefetchPlan();
    plan.observe(blockInput(1), request({ chain: "ethereum", number: 1, full: true }));
    plan.observe(blockInput(2), request({ full: true, number: 2, chain: "ethereum" }));
    expect(plan.state).toBe("confirmed");
  });

  test("a template that does not fit the next input fails the confirmation", () => {
    const plan = new IoPrefetchPlan({ maxFailedConfirmations: 1 });
    plan.observe(blockInput(1), blockRequest(blockInput(1)));
    plan.observe({ chain: "ethereum" }, request({ chain: "ethereum", number: 2 }));
    expect(plan.state).toBe("off");
  });
});

describe("IoPrefetchPlan: turning off", () => {
  test("a request that does not depend on the input never confirms and goes off after 3", () => {
    const plan = new IoPrefetchPlan();
    // "latest" and "mainnet" appear nowhere in the input.
    const constant = request({ chain: "mainnet", number: "latest" });
    plan.observe(blockInput(1), constant);
    plan.observe(blockInput(2), constant);
    expect(plan.state).toBe("learning");
    expect(plan.predict(blockInput(3))).toBeNull();
    plan.observe(blockInput(3), constant);
    expect(plan.state).toBe("off");
  });

  test("off after 3 failed confirmations, and stays off whatever comes next", () => {
    const plan = new IoPrefetchPlan();
    // The function reads a different field each time: every template fails its confirmation.
    plan.observe({ a: 1, b: 2, c: 3 }, request({ x: 1 }));
    plan.observe({ a: 4, b: 5, c: 6 }, request({ x: 5 }));
    plan.observe({ a: 7, b: 8, c: 9 }, request({ x: 9 }));
    expect(plan.state).toBe("learning");
    plan.observe({ a: 10, b: 11, c: 12 }, request({ x: 10 }));
    expect(plan.state).toBe("off");

    for (let n = 0; n < 5; n++) plan.observe(blockInput(n), blockRequest(blockInput(n)));
    plan.prefetchEnded(true);
    expect(plan.state).toBe("off");
    expect(plan.predict(blockInput(9))).toBeNull();
  });

  test("the failed-confirmation limit is configurable", () => {
    const plan = new IoPrefetchPlan({ maxFailedConfirmations: 5 });
    for (let i = 0; i < 4; i++) plan.observe(blockInput(i), request({ constant: true }));
    expect(plan.state).toBe("learning");
    plan.observe(blockInput(4), request({ constant: true }));
    expect(plan.state).toBe("off");
  });

  test("off after 3 unused prefetches in a row; a used one in between resets the count", () => {
    const plan = confirmedBlockPlan();
    plan.prefetchEnded(false);
    plan.prefetchEnded(false);
    plan.prefetchEnded(true);
    plan.prefetchEnded(false);
    plan.prefetchEnded(false);
    expect(plan.state).toBe("confirmed");
    expect(plan.predict(blockInput(3))).not.toBeNull();
    plan.prefetchEnded(false);
    expect(plan.state).toBe("off");
    expect(plan.predict(blockInput(3))).toBeNull();
    plan.prefetchEnded(true);
    expect(plan.state).toBe("off");
  });

  test("the unused-in-a-row limit is configurable", () => {
    const plan = new IoPrefetchPlan({ maxUnusedInARow: 1 });
    plan.observe(blockInput(1), blockRequest(blockInput(1)));
    plan.observe(blockInput(2), blockRequest(blockInput(2)));
    plan.prefetchEnded(false);
    expect(plan.state).toBe("off");
  });

  test("while confirmed, an observed call whose prediction differs counts as unused; a matching one resets", () => {
    const plan = confirmedBlockPlan();
    const wrong = request({ chain: "ethereum", number: "latest" });
    plan.observe(blockInput(3), wrong);
    plan.observe(blockInput(4), wrong);
    plan.observe(blockInput(5), blockRequest(blockInput(5)));
    plan.observe(blockInput(6), wrong);
    plan.prefetchEnded(false);
    expect(plan.state).toBe("confirmed");
    plan.observe(blockInput(7), wrong);
    expect(plan.state).toBe("off");
  });

  test("while confirmed, an observed call with no prediction counts for nothing", () => {
    const plan = confirmedBlockPlan();
    plan.prefetchEnded(false);
    plan.prefetchEnded(false);
    for (let i = 0; i < 5; i++) plan.observe({ chain: "ethereum" }, request({ whatever: i }));
    expect(plan.state).toBe("confirmed");
    plan.prefetchEnded(false);
    expect(plan.state).toBe("off");
  });

  test("limits must be integers >= 1", () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new IoPrefetchPlan({ maxFailedConfirmations: bad })).toThrow(RangeError);
      expect(() => new IoPrefetchPlan({ maxUnusedInARow: bad })).toThrow(RangeError);
    }
    expect(() => new IoPrefetchPlan({ maxFailedConfirmations: 1, maxUnusedInARow: 1 })).not.toThrow();
  });
});

describe("IoPrefetchPlan: predictions that do not fit", () => {
  test("a missing referenced path gives null", () => {
    const plan = confirmedBlockPlan();
    expect(plan.predict({ chain: "ethereum" })).toBeNull();
    expect(plan.predict({ blockNumber: 5 })).toBeNull();
    expect(plan.predict(5)).toBeNull();
    expect(plan.predict(null)).toBeNull();
    expect(plan.predict([1, 2])).toBeNull();
  });

  test("a referenced value of the wrong type gives null", () => {
    const plan = confirmedBlockPlan();
    expect(plan.predict({ chain: "ethereum", blockNumber: true })).toBeNull();
    expect(plan.predict({ chain: "ethereum", blockNumber: null })).toBeNull();
    expect(plan.predict({ chain: "ethereum", blockNumber: { n: 1 } })).toBeNull();
    expect(plan.predict({ chain: "ethereum", blockNumber: [1] })).toBeNull();
    // A plain reference takes a number or a string, either one.
    expect(plan.predict({ chain: "ethereum", blockNumber: "latest" })).toEqual(request({ chain: "ethereum", number: "latest" }));
  });

  test("an array path needs an array with that index; an object path needs an object with that own key", () => {
    const plan = new IoPrefetchPlan();
    plan.observe([10, 20], request({ number: 20 }));
    plan.observe([11, 21], request({ number: 21 }));
    expect(plan.state).toBe("confirmed");
    expect(plan.predict([12, 22])).toEqual(request({ number: 22 }));
    expect(plan.predict([12])).toBeNull();
    expect(plan.predict({ "1": 22 })).toBeNull();

    const keyed = confirmedBlockPlan();
    // An inherited key is not the input's own: no prediction.
    const inherited = Object.create({ blockNumber: 5 }) as { [key: string]: JsonValue };
    inherited["chain"] = "ethereum";
    expect(keyed.predict(inherited)).toBeNull();
  });
});

describe("IoPrefetchPlan: hostile values", () => {
  function expectNotLearnedFrom(input: JsonValue, params: JsonValue): void {
    const plan = new IoPrefetchPlan({ maxFailedConfirmations: 1 });
    expect(() => plan.observe(input, request(params))).not.toThrow();
    // Not learned from: counted as a failed confirmation (here the only one allowed).
    expect(plan.state).toBe("off");
  }

  function expectLearnedFrom(input: JsonValue, params: JsonValue): void {
    const plan = new IoPrefetchPlan({ maxFailedConfirmations: 1 });
    plan.observe(input, request(params));
    plan.observe(input, request(params));
    expect(plan.state).toBe("confirmed");
  }

  test("params over 4 KiB are not learned from; just under is", () => {
    const input = blockInput(7);
    expectNotLearnedFrom(input, { number: 7, padding: "x".repeat(4096) });
    const around = JSON.stringify({ number: 7, padding: "" }).length;
    expectLearnedFrom(input, { number: 7, padding: "x".repeat(4096 - around) });
    expectNotLearnedFrom(input, { number: 7, padding: "x".repeat(4096 - around + 1) });
    // Bytes, not characters: "é" is two bytes in UTF-8.
    expectNotLearnedFrom(input, { number: 7, padding: "é".repeat(2100) });
  });

  test("params nested deeper than 8 are not learned from; 8 is", () => {
    expectNotLearnedFrom(blockInput(7), nestedArrays(9, 7));
    expectLearnedFrom(blockInput(7), nestedArrays(8, 7));
  });

  test("params with more than 256 leaves are not learned from; 256 is", () => {
    const leaves = (count: number): JsonValue => [7, ...Array.from({ length: count - 1 }, () => true)];
    expectNotLearnedFrom(blockInput(7), leaves(300));
    expectNotLearnedFrom(blockInput(7), leaves(257));
    expectLearnedFrom(blockInput(7), leaves(256));
    // Empty arrays and objects are leaves too.
    expectNotLearnedFrom(blockInput(7), [7, ...Array.from({ length: 256 }, () => [])]);
  });

  test("an input with more than 256 leaves or nested deeper than 8 is not learned from", () => {
    const wide: { [key: string]: JsonValue } = { blockNumber: 7 };
    for (let i = 0; i < 299; i++) wide[`k${i}`] = i + 1000;
    expectNotLearnedFrom(wide, { number: 7 });
    expectNotLearnedFrom(nestedArrays(9, 7), { number: 7 });
    expectLearnedFrom(nestedArrays(8, 7), { number: 7 });
  });

  test("very deep or very wide values never throw, in observe or predict", () => {
    const veryDeep = nestedArrays(100_000, 7);
    const veryWide = Array.from({ length: 100_000 }, (_, i) => i);
    const plan = new IoPrefetchPlan({ maxFailedConfirmations: 10 });
    expect(() => {
      plan.observe(veryDeep, request({ number: 7 }));
      plan.observe(blockInput(7), request(veryDeep));
      plan.observe(veryWide, request({ number: 7 }));
      plan.observe(blockInput(7), request(veryWide));
    }).not.toThrow();
    expect(plan.state).toBe("learning");

    const confirmed = confirmedBlockPlan();
    expect(() => {
      expect(confirmed.predict(veryDeep)).toBeNull();
      confirmed.observe(veryDeep, request(veryDeep));
      confirmed.observe(blockInput(1), request(veryDeep));
      confirmed.observe(blockInput(1), request(veryWide));
    }).not.toThrow();
  });

  test("a failed observation after a learned template counts once, and the next one learns afresh", () => {
    const plan = new IoPrefetchPlan({ maxFailedConfirmations: 2 });
    plan.observe(blockInput(1), blockRequest(blockInput(1)));
    plan.observe(blockInput(2), request({ chain: "ethereum", number: 2, padding: "x".repeat(5000) }));
    expect(plan.state).toBe("learning");
    plan.observe(blockInput(3), blockRequest(blockInput(3)));
    expect(plan.state).toBe("learning");
    plan.observe(blockInput(4), blockRequest(blockInput(4)));
    expect(plan.state).toBe("confirmed");
  });

  test("a __proto__ key in params and input is kept as data, with no prototype pollution", () => {
    const input = JSON.parse('{"__proto__": {"polluted": 1}, "chain": "ethereum", "blockNumber": 5}') as JsonValue;
    const params = JSON.parse('{"__proto__": {"polluted": true, "n": 5}, "constructor": {"prototype": {"polluted": true}}}') as JsonValue;
    const plan = new IoPrefetchPlan();
    plan.observe(input, request(params));
    const next = JSON.parse('{"__proto__": {"polluted": 1}, "chain": "ethereum", "blockNumber": 6}') as JsonValue;
    const nextParams = JSON.parse('{"__proto__": {"polluted": true, "n": 6}, "constructor": {"prototype": {"polluted": true}}}') as JsonValue;
    plan.observe(next, request(nextParams));
    expect(plan.state).toBe("confirmed");

    const predicted = plan.predict(JSON.parse('{"chain": "ethereum", "blockNumber": 9}') as JsonValue);
    expect(predicted).not.toBeNull();
    const predictedParams = (predicted as IoRequestShape).params as { [key: string]: JsonValue };
    expect(Object.keys(predictedParams)).toEqual(["__proto__", "constructor"]);
    expect(Object.getPrototypeOf(predictedParams)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(predictedParams, "__proto__")?.value).toEqual({ polluted: true, n: 9 });
    expect(jsonEqual(predictedParams, JSON.parse('{"__proto__": {"polluted": true, "n": 9}, "constructor": {"prototype": {"polluted": true}}}') as JsonValue)).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((Object.prototype as Record<string, unknown>).polluted).toBeUndefined();
  });

  test("a reference into the input through a __proto__ key reads the own key", () => {
    const plan = new IoPrefetchPlan();
    plan.observe(JSON.parse('{"__proto__": {"n": 5}}') as JsonValue, request({ number: 5 }));
    plan.observe(JSON.parse('{"__proto__": {"n": 6}}') as JsonValue, request({ number: 6 }));
    expect(plan.state).toBe("confirmed");
    expect(plan.predict(JSON.parse('{"__proto__": {"n": 7}}') as JsonValue)).toEqual(request({ number: 7 }));
    // A plain object with no own __proto__ key has nothing there.
    expect(plan.predict({ n: 7 })).toBeNull();
  });
});

describe("IoPrefetchPlan: fresh predictions", () => {
  test("a prediction mutated by the caller does not change later predictions", () => {
    const plan = new IoPrefetchPlan();
    plan.observe(blockInput(1), request({ chain: "ethereum", number: 1, opts: { full: true }, list: [1, "x"] }));
    plan.observe(blockInput(2), request({ chain: "ethereum", number: 2, opts: { full: true }, list: [2, "x"] }));
    expect(plan.state).toBe("confirmed");
    const first = plan.predict(blockInput(3)) as IoRequestShape;
    const params = first.params as { [key: string]: JsonValue };
    params["chain"] = "mutated";
    (params["opts"] as { [key: string]: JsonValue })["full"] = false;
    (params["list"] as JsonValue[]).push("extra");
    delete params["number"];
    expect(plan.predict(blockInput(3))).toEqual(request({ chain: "ethereum", number: 3, opts: { full: true }, list: [3, "x"] }));
  });

  test("mutating the observed request afterwards does not change the template", () => {
    const plan = new IoPrefetchPlan();
    const observed = { chain: "ethereum", number: 1, opts: { full: true } };
    plan.observe(blockInput(1), request(observed));
    observed.opts.full = false;
    observed.chain = "mutated";
    plan.observe(blockInput(2), request({ chain: "ethereum", number: 2, opts: { full: true } }));
    expect(plan.state).toBe("confirmed");
  });
});

describe("jsonEqual", () => {
  test("scalars by type and value", () => {
    expect(jsonEqual(1, 1)).toBe(true);
    expect(jsonEqual("a", "a")).toBe(true);
    expect(jsonEqual(null, null)).toBe(true);
    expect(jsonEqual(true, true)).toBe(true);
    expect(jsonEqual(1, true)).toBe(false);
    expect(jsonEqual(0, false)).toBe(false);
    expect(jsonEqual(1, "1")).toBe(false);
    expect(jsonEqual(null, false)).toBe(false);
    expect(jsonEqual(null, {})).toBe(false);
    expect(jsonEqual("", 0)).toBe(false);
  });

  test("objects by own keys in any order, arrays by order", () => {
    expect(jsonEqual({ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 })).toBe(true);
    expect(jsonEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(jsonEqual({ a: 1, b: 2 }, { a: 1 })).toBe(false);
    expect(jsonEqual({ a: 1 }, { b: 1 })).toBe(false);
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
    expect(jsonEqual([1], [1, 1])).toBe(false);
    expect(jsonEqual([], {})).toBe(false);
    expect(jsonEqual({}, [])).toBe(false);
    expect(jsonEqual({ a: { b: [null] } }, { a: { b: [null] } })).toBe(true);
    expect(jsonEqual({ a: { b: [null] } }, { a: { b: [false] } })).toBe(false);
  });

  test("deep values do not exhaust the stack", () => {
    expect(jsonEqual(nestedArrays(100_000, 1), nestedArrays(100_000, 1))).toBe(true);
    expect(jsonEqual(nestedArrays(100_000, 1), nestedArrays(100_000, 2))).toBe(false);
  });
});
