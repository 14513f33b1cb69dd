import type { JsonValue } from "../../runtime/json/raw-json";

/**
 * IoPrefetchPlan learns, from calls the Worker watches, how a task's function derives its first IO
 * request from its input, so the Worker can fetch that request for a new call before the call
 * reaches the executor (the function then finds the answer already there: no round trip).
 *
 * Sans-IO: it only decides. The Worker tells it what it saw (observe, prefetchEnded) and asks it
 * what to fetch (predict). It stops itself for the task once it keeps guessing wrong or its answers
 * go unused, since a wasted prefetch costs a backend request for nothing.
 */

/** One IO request as the executor makes it. */
export interface IoRequestShape {
  readonly backend: string;
  readonly op: string;
  readonly params: JsonValue;
}

export type IoPrefetchState = "learning" | "confirmed" | "off";

export interface IoPrefetchLimits {
  /** Confirmations that may fail (a prediction that did not match the call's actual request) before the task stops learning. Default 3. */
  readonly maxFailedConfirmations?: number;
  /** Prefetched answers in a row that the function did not take before prefetching stops for the task. Default 3. */
  readonly maxUnusedInARow?: number;
}

const DEFAULT_MAX_FAILED_CONFIRMATIONS = 3;
const DEFAULT_MAX_UNUSED_IN_A_ROW = 3;

// Input and params come from users: bound what is walked, so a hostile one costs little and
// cannot exhaust the stack. A leaf is a scalar or an empty array/object.
const MAX_PARAMS_BYTES = 4 * 1024;
const MAX_DEPTH = 8;
const MAX_LEAVES = 256;

/** A step into a JSON value: a key of an object, or an index of an array. */
type PathStep = string | number;
type Scalar = null | boolean | number | string;

type TemplateNode =
  | { readonly kind: "constant"; readonly value: Scalar }
  /** The number or string at `path` in the input, as it is. */
  | { readonly kind: "inputValue"; readonly path: readonly PathStep[] }
  /** The non-negative safe integer at `path` in the input, as an RPC quantity ("0x4d2"). */
  | { readonly kind: "inputHex"; readonly path: readonly PathStep[] }
  | { readonly kind: "array"; readonly items: readonly TemplateNode[] }
  | { readonly kind: "object"; readonly entries: readonly (readonly [string, TemplateNode])[] };

interface Template {
  readonly backend: string;
  readonly op: string;
  readonly params: TemplateNode;
}

export class IoPrefetchPlan {
  private readonly maxFailedConfirmations: number;
  private readonly maxUnusedInARow: number;
  private current: IoPrefetchState = "learning";
  private template: Template | null = null;
  private failedConfirmations = 0;
  private unusedInARow = 0;

  constructor(limits: IoPrefetchLimits = {}) {
    this.maxFailedConfirmations = positiveIntegerLimit("maxFailedConfirmations", limits.maxFailedConfirmations, DEFAULT_MAX_FAILED_CONFIRMATIONS);
    this.maxUnusedInARow = positiveIntegerLimit("maxUnusedInARow", limits.maxUnusedInARow, DEFAULT_MAX_UNUSED_IN_A_ROW);
  }

  get state(): IoPrefetchState {
    return this.current;
  }

  /** predict: the request to fetch before a call of `input` starts, or null (still learning, off, or the template does not fit this input). */
  predict(input: JsonValue): IoRequestShape | null {
    if (this.current !== "confirmed" || this.template === null) return null;
    return applyTemplate(this.template, input);
  }

  /** observe: the first IO request of a call of `input` that was given no prefetched answer. */
  observe(input: JsonValue, request: IoRequestShape): void {
    if (this.current === "off") return;
    if (this.current === "confirmed") {
      // The call got no prefetch. Had it got one (the prediction exists), would it have been used?
      const prediction = this.template === null ? null : applyTemplate(this.template, input);
      if (prediction === null) return;
      if (sameRequest(prediction, request)) this.unusedInARow = 0;
      else this.countUnused();
      return;
    }
    if (this.template === null) {
      this.template = learnTemplate(input, request);
      if (this.template === null) this.countFailedConfirmation();
      return;
    }
    const prediction = applyTemplate(this.template, input);
    if (prediction !== null && sameRequest(prediction, request)) {
      this.current = "confirmed";
      return;
    }
    // The template is wrong for this call: start over from what this call did.
    this.template = learnTemplate(input, request);
    this.countFailedConfirmation();
  }

  /** prefetchEnded: a call given a prefetched answer ended; `used` says whether its function took it. */
  prefetchEnded(used: boolean): void {
    if (this.current === "off") return;
    if (used) this.unusedInARow = 0;
    else this.countUnused();
  }

  private countFailedConfirmation(): void {
    this.failedConfirmations++;
    if (this.failedConfirmations >= this.maxFailedConfirmations) this.turnOff();
  }

  private countUnused(): void {
    this.unusedInARow++;
    if (this.unusedInARow >= this.maxUnusedInARow) this.turnOff();
  }

  private turnOff(): void {
    this.current = "off";
    this.template = null;
  }
}

function positiveIntegerLimit(name: string, given: number | undefined, fallback: number): number {
  if (given === undefined) return fallback;
  if (!Number.isSafeInteger(given) || given < 1) throw new RangeError(`IoPrefetchLimits.${name}: expected an integer >= 1, got ${given}`);
  return given;
}

/**
 * jsonEqual: strict deep equality of JSON values: same types (1 is not true, "1" is not 1), objects
 * with the same own keys in any order, arrays element by element. Iterative, so a deep value
 * cannot exhaust the stack.
 */
export function jsonEqual(a: JsonValue, b: JsonValue): boolean {
  const pending: [JsonValue, JsonValue][] = [[a, b]];
  for (let pair = pending.pop(); pair !== undefined; pair = pending.pop()) {
    const [x, y] = pair;
    if (x === y) continue;
    if (Array.isArray(x)) {
      if (!Array.isArray(y) || x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) pending.push([x[i] as JsonValue, y[i] as JsonValue]);
      continue;
    }
    if (!isJsonObject(x) || !isJsonObject(y)) return false;
    const keys = Object.keys(x);
    if (keys.length !== Object.keys(y).length) return false;
    for (const key of keys) {
      if (!Object.hasOwn(y, key)) return false;
      pending.push([x[key] as JsonValue, y[key] as JsonValue]);
    }
  }
  return true;
}

function sameRequest(a: IoRequestShape, b: IoRequestShape): boolean {
  return a.backend === b.backend && a.op === b.op && jsonEqual(a.params, b.params);
}

function isJsonObject(value: JsonValue): value is { [key: string]: JsonValue } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * visitWithinBounds walks `value` depth-first (object keys in their own order), calling onScalar
 * for each scalar with its path. It stops and returns false as soon as the value nests deeper than
 * MAX_DEPTH or has more than MAX_LEAVES leaves, so a hostile value is never walked in full.
 */
function visitWithinBounds(value: JsonValue, onScalar: (path: readonly PathStep[], scalar: Scalar) => void): boolean {
  const path: PathStep[] = [];
  let leaves = 0;
  const visit = (node: JsonValue): boolean => {
    if (node === null || typeof node !== "object") {
      onScalar(path, node);
      return ++leaves <= MAX_LEAVES;
    }
    if (path.length + 1 > MAX_DEPTH) return false;
    const steps: PathStep[] = Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node);
    if (steps.length === 0) return ++leaves <= MAX_LEAVES;
    for (const step of steps) {
      path.push(step);
      const child = (Array.isArray(node) ? node[step as number] : node[step as string]) as JsonValue;
      const fits = visit(child);
      path.pop();
      if (!fits) return false;
    }
    return true;
  };
  return visit(value);
}

/** Where the input's scalars are, by value; the first path in walk order wins. */
interface InputIndex {
  readonly numbers: Map<number, readonly PathStep[]>;
  readonly strings: Map<string, readonly PathStep[]>;
  /** "0x" + n.toString(16) for each non-negative safe integer n. */
  readonly hex: Map<string, readonly PathStep[]>;
}

function indexInput(input: JsonValue): InputIndex | null {
  const index: InputIndex = { numbers: new Map(), strings: new Map(), hex: new Map() };
  const remember = <K>(map: Map<K, readonly PathStep[]>, key: K, path: readonly PathStep[]): void => {
    if (!map.has(key)) map.set(key, [...path]);
  };
  const fits = visitWithinBounds(input, (path, scalar) => {
    if (typeof scalar === "number" && Number.isFinite(scalar)) {
      remember(index.numbers, scalar, path);
      if (Number.isSafeInteger(scalar) && scalar >= 0) remember(index.hex, `0x${scalar.toString(16)}`, path);
    } else if (typeof scalar === "string" && scalar !== "") {
      remember(index.strings, scalar, path);
    }
  });
  return fits ? index : null;
}

function paramsWithinBounds(params: JsonValue): boolean {
  // Shape first: stringifying a deeply nested value could itself exhaust the stack.
  if (!visitWithinBounds(params, () => {})) return false;
  return new TextEncoder().encode(JSON.stringify(params)).length <= MAX_PARAMS_BYTES;
}

/** learnTemplate: the template `request` suggests for `input`, or null if out of bounds or it does not depend on the input. */
function learnTemplate(input: JsonValue, request: IoRequestShape): Template | null {
  if (!paramsWithinBounds(request.params)) return null;
  const index = indexInput(input);
  if (index === null) return null;
  let references = 0;
  const reference = (kind: "inputValue" | "inputHex", path: readonly PathStep[]): TemplateNode => {
    references++;
    return { kind, path };
  };
  const build = (node: JsonValue): TemplateNode => {
    if (Array.isArray(node)) return { kind: "array", items: node.map(build) };
    if (isJsonObject(node)) return { kind: "object", entries: Object.keys(node).map((key) => [key, build(node[key] as JsonValue)] as const) };
    if (typeof node === "number") {
      const path = Number.isFinite(node) ? index.numbers.get(node) : undefined;
      return path === undefined ? { kind: "constant", value: node } : reference("inputValue", path);
    }
    if (typeof node === "string" && node !== "") {
      const path = index.strings.get(node);
      if (path !== undefined) return reference("inputValue", path);
      const hexPath = index.hex.get(node);
      if (hexPath !== undefined) return reference("inputHex", hexPath);
    }
    return { kind: "constant", value: node };
  };
  const params = build(request.params);
  return references === 0 ? null : { backend: request.backend, op: request.op, params };
}

/** applyTemplate: a fresh request for `input`, or null if a referenced value is missing or of the wrong type. */
function applyTemplate(template: Template, input: JsonValue): IoRequestShape | null {
  const build = (node: TemplateNode): JsonValue | undefined => {
    switch (node.kind) {
      case "constant":
        return node.value;
      case "inputValue": {
        const value = valueAt(input, node.path);
        return typeof value === "number" || typeof value === "string" ? value : undefined;
      }
      case "inputHex": {
        const value = valueAt(input, node.path);
        return typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? `0x${value.toString(16)}` : undefined;
      }
      case "array": {
        const items: JsonValue[] = [];
        for (const item of node.items) {
          const value = build(item);
          if (value === undefined) return undefined;
          items.push(value);
        }
        return items;
      }
      case "object": {
        const entries: [string, JsonValue][] = [];
        for (const [key, child] of node.entries) {
          const value = build(child);
          if (value === undefined) return undefined;
          entries.push([key, value]);
        }
        // fromEntries defines each key as data: a key named "__proto__" stays a key.
        return Object.fromEntries(entries);
      }
    }
  };
  const params = build(template.params);
  return params === undefined ? null : { backend: template.backend, op: template.op, params };
}

/** valueAt: the value at `path` in `value` (own keys only), or undefined. */
function valueAt(value: JsonValue, path: readonly PathStep[]): JsonValue | undefined {
  let current: JsonValue = value;
  for (const step of path) {
    if (typeof step === "number") {
      if (!Array.isArray(current) || step >= current.length) return undefined;
      current = current[step] as JsonValue;
    } else {
      if (!isJsonObject(current) || !Object.hasOwn(current, step)) return undefined;
      current = current[step] as JsonValue;
    }
  }
  return current;
}
