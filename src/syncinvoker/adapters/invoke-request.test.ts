import { describe, expect, test } from "bun:test";
import { digestOf, FunctionCodeView } from "../../runtime/functions/function-code-view";
import { SyncInvokerErrorCode } from "../core/sync-invoker-error";
import { budgetOf, parseArgs, resolveFunction } from "./invoke-request";

const ref = (o: { name?: string; source?: string; entry?: string; filename?: string }) => ({ name: o.name ?? "", source: o.source ?? "", entry: o.entry ?? "", filename: o.filename ?? "" });
const codeOf = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as { code: string }).code;
  }
  return "no error";
};

describe("resolveFunction", () => {
  const view = new FunctionCodeView();
  view.update(new Map([["stats", "def main(ctx, x):\n    return 1\n"]]));

  test("a name resolves in the snapshot with its digest; inline source gets its digest; entry defaults to main", () => {
    expect(resolveFunction(ref({ name: "stats", entry: "run" }), view.current())).toMatchObject({ name: "stats", entry: "run", digest: view.current().get("stats")!.digest });
    expect(resolveFunction(ref({ source: "x = 1" }), null)).toEqual({ source: "x = 1", entry: "main", digest: digestOf("x = 1"), name: "" });
    // The client's file name (tracebacks show it) keeps its last path part and safe characters only.
    expect(resolveFunction(ref({ source: "x = 1", filename: "../dir/my fn<1>.py" }), null)).toEqual({ source: "x = 1", entry: "main", digest: digestOf("x = 1"), name: "", filename: "myfn1.py" });
    expect(resolveFunction(ref({ name: "stats" }), view.current())).toMatchObject({ filename: "stats.py" });
  });

  test("unknown names are FUNCTION_NOT_FOUND, with or without FUNCTIONS_DIR", () => {
    expect(codeOf(() => resolveFunction(ref({ name: "nope" }), view.current()))).toBe(SyncInvokerErrorCode.FunctionNotFound);
    expect(codeOf(() => resolveFunction(ref({ name: "stats" }), null))).toBe(SyncInvokerErrorCode.FunctionNotFound);
  });

  test("malformed refs are INVALID_ARGUMENT", () => {
    for (const bad of [undefined, ref({}), ref({ name: "a", source: "b" }), ref({ source: "x", entry: "1abc" }), ref({ source: "x", entry: "a.b" })]) {
      expect(codeOf(() => resolveFunction(bad, view.current()))).toBe(SyncInvokerErrorCode.InvalidArgument);
    }
  });
});

describe("parseArgs and budgetOf", () => {
  test("JSON args parse; empty is null; anything else is INVALID_ARGUMENT quoting the start of it", () => {
    expect(parseArgs(Buffer.from('{"a": [1, 2]}'))).toEqual({ a: [1, 2] });
    expect(parseArgs(Buffer.alloc(0))).toBeNull();
    expect(codeOf(() => parseArgs(Buffer.from("{'a': 1}")))).toBe(SyncInvokerErrorCode.InvalidArgument);
    expect(() => parseArgs(Buffer.from("nope"))).toThrow('args: not valid JSON');
  });

  test("timeout_ms 0 takes the default; above 10 minutes is refused", () => {
    expect(budgetOf(0, 5000)).toBe(5000);
    expect(budgetOf(250, 5000)).toBe(250);
    expect(budgetOf(600_000, 5000)).toBe(600_000);
    expect(codeOf(() => budgetOf(600_001, 5000))).toBe(SyncInvokerErrorCode.InvalidArgument);
  });
});
