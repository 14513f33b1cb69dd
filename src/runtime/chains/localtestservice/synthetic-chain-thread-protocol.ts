import type { SyntheticRequest } from "./synthetic-chain-jobs";

/** Messages to the synthetic chain's thread: the chains' head once, then requests by id. */
export type SyntheticThreadMessage = { readonly kind: "init"; readonly head: number } | { readonly kind: "request"; readonly id: number; readonly request: SyntheticRequest };

/**
 * The thread's answer to request `id`: the answer's JSON as UTF-8 bytes (their buffer transferred,
 * not copied), or why the chain refused it.
 */
export type SyntheticThreadReply = { readonly id: number; readonly ok: true; readonly bytes: Uint8Array } | { readonly id: number; readonly ok: false; readonly message: string };
