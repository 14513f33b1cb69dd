/**
 * bench/scale/bare-baseline.ts: the task-id prefix of scale.ts's bare RequestTaskSlot calls (the
 * same RPC straight to slot-responder.ts, no Coordinator in the path), which the responder answers
 * at once without reserving anything. A module of its own: both processes import it, and the
 * responder's module runs its server when imported.
 */
export const BARE_TASK_PREFIX = "bare-";
