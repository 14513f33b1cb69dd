/**
 * Slot ids are opaque to clients but carry the Worker's incarnation: `${incarnation}.${counter}`,
 * where the incarnation is a random token chosen at process start and the counter grows by one per
 * allocation. A Worker therefore never issues the same id twice, and after a restart it recognises
 * (and rejects) the ids of its earlier life instead of mistaking them for live slots.
 */

/** INCARNATION_PATTERN: letters, digits, `_` and `-`, 1..64 characters (no `.`, so parsing is unambiguous). */
export const INCARNATION_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

const SLOT_ID_PATTERN = /^([A-Za-z0-9_-]{1,64})\.([1-9][0-9]{0,15})$/;

/** formatSlotId builds the id of the `counter`-th slot allocated by incarnation `incarnation`. */
export function formatSlotId(incarnation: string, counter: number): string {
  return `${incarnation}.${counter}`;
}

/** parseSlotId splits a slot id into its incarnation and counter, or returns null if it is not one. */
export function parseSlotId(slotId: string): { incarnation: string; counter: number } | null {
  const m = SLOT_ID_PATTERN.exec(slotId);
  if (m === null) return null;
  const counter = Number(m[2]);
  if (!Number.isSafeInteger(counter)) return null;
  return { incarnation: m[1] as string, counter };
}
