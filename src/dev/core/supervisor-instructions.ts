import type { ChildSpec } from "./dev-plan";

/** SupervisorInstruction: what the adapters must do after an event, in list order. */
export type SupervisorInstruction =
  | { readonly kind: "spawnChild"; readonly child: ChildSpec }
  | { readonly kind: "signalChild"; readonly id: string; readonly signal: "SIGTERM" | "SIGKILL" }
  /** Every child is ready: print the endpoints (id -> endpoint, in plan order). */
  | { readonly kind: "announceReady"; readonly endpoints: ReadonlyArray<readonly [string, string]> }
  | { readonly kind: "report"; readonly level: "info" | "warn" | "error"; readonly message: string }
  /** Every child has ended: the dev process exits with this code. */
  | { readonly kind: "exit"; readonly code: number };
