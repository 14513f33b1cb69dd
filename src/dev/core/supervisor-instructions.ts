import type { ChildSpec } from "./dev-plan";

/** SupervisorInstruction: what the adapters must do after an event, in list order. */
export type SupervisorInstruction =
  | { readonly type: "spawnChild"; readonly child: ChildSpec }
  | { readonly type: "signalChild"; readonly id: string; readonly signal: "SIGTERM" | "SIGKILL" }
  /** Every child is ready: print the endpoints (id -> endpoint, in plan order). */
  | { readonly type: "announceReady"; readonly endpoints: ReadonlyArray<readonly [string, string]> }
  | { readonly type: "report"; readonly level: "info" | "warn" | "error"; readonly message: string }
  /** Every child has ended: the dev process exits with this code. */
  | { readonly type: "exit"; readonly code: number };
