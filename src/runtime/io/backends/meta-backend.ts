import type { FunctionSnapshot } from "../../functions/function-code-view";
import { type Backend } from "./backend-registry";
import { BackendError } from "../../backend-error";
import { paramsObject } from "./backend-params";

/** The entry every named function is called at. */
export const FUNCTION_ENTRY = "main";

/**
 * metaBackend shows the Function Code View to user functions: `getFunction {name}` ->
 * {name, digest, source, entry, epoch}, `listFunctions` -> {epoch, functions: [{name, digest}]}.
 * It reads the snapshot current at the request (null: functions by name are not configured).
 */
export function metaBackend(current: () => FunctionSnapshot | null): Backend {
  const snapshot = (): FunctionSnapshot => {
    const s = current();
    if (!s) throw new BackendError("NotFound", "functions by name are not configured on this Worker (FUNCTIONS_DIR is empty)");
    return s;
  };
  return {
    name: "meta",
    ops: {
      getFunction: {
        kind: "read",
        handle: (params) => {
          const p = paramsObject(params, "getFunction");
          if (typeof p.name !== "string" || p.name === "") throw new BackendError("InvalidParams", "getFunction: name is required");
          const s = snapshot();
          const f = s.get(p.name);
          if (!f) throw new BackendError("NotFound", `getFunction: no function ${JSON.stringify(p.name)} at epoch ${s.epoch} (have: ${s.names().join(", ") || "none"})`);
          return { name: f.name, digest: f.digest, source: f.source, entry: FUNCTION_ENTRY, epoch: s.epoch };
        },
      },
      listFunctions: {
        kind: "read",
        handle: () => {
          const s = snapshot();
          return { epoch: s.epoch, functions: s.names().map((name) => ({ name, digest: s.get(name)!.digest })) };
        },
      },
    },
  };
}
