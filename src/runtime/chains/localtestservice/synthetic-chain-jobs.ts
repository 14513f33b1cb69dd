import type { EthLog, EthLogFilter } from "./eth-types";
import { SyntheticChain } from "./synthetic-chain";

/**
 * SyntheticRequest: one piece of work for the synthetic chain's generator, numbers already
 * checked by the caller (LocalTestChain): a block, its receipts, the logs of a block range, or
 * the chain's id.
 */
export type SyntheticRequest =
  | { readonly op: "block"; readonly chain: string; readonly number: number; readonly full: boolean }
  | { readonly op: "receipts"; readonly chain: string; readonly number: number }
  | { readonly op: "logs"; readonly chain: string; readonly filter: EthLogFilter }
  | { readonly op: "chainId"; readonly chain: string };

/**
 * The synthetic chains kept at once (each remembers up to 65,536 block hashes and the accounts it
 * generated): a function may name any number of chains, and one per name was kept for the process's
 * life. Past this, the chain used least recently is dropped; a chain is a pure function of its name,
 * so asking it again regenerates the same blocks (only the remembered hashes are lost).
 */
export const MAX_SYNTHETIC_CHAINS = 64;

/**
 * SyntheticChains keeps one SyntheticChain per chain name, all with the same head, so that the
 * block hashes each remembers serve every request of its chain; at most `max` of them, the least
 * recently used dropped first.
 */
export class SyntheticChains {
  /** In order of last use (a Map keeps insertion order: a used chain is moved to the end). */
  private readonly chains = new Map<string, SyntheticChain>();
  /** Chains dropped to stay within `max`. */
  dropped = 0;

  constructor(
    readonly head: number,
    readonly max = MAX_SYNTHETIC_CHAINS,
  ) {}

  of(name: string): SyntheticChain {
    let c = this.chains.get(name);
    if (c) this.chains.delete(name);
    else {
      c = new SyntheticChain(name, { head: this.head });
      if (this.chains.size >= this.max) {
        this.chains.delete(this.chains.keys().next().value!);
        this.dropped++;
      }
    }
    this.chains.set(name, c);
    return c;
  }

  get size(): number {
    return this.chains.size;
  }
}

/**
 * answerSteps does a request as a sequence of steps, each generating at most one block (a few
 * ms; the first block of a cold run of parent links up to about 30 ms), and returns the answer's
 * JSON text. Whoever runs the steps decides what happens between them: the generator thread takes
 * one step of each request in turn, so a request for one block waits for one step of each other
 * request, never for a whole range. A request the chain refuses throws (the message says why).
 */
export function* answerSteps(chains: SyntheticChains, req: SyntheticRequest): Generator<void, string> {
  const chain = chains.of(req.chain);
  switch (req.op) {
    case "block":
      return JSON.stringify(chain.block(req.number, req.full));
    case "receipts":
      return JSON.stringify(chain.blockReceipts(req.number));
    case "chainId":
      return JSON.stringify(chain.chainId);
    case "logs": {
      const { fromBlock, toBlock } = req.filter;
      const out: EthLog[] = [];
      const last = Math.min(toBlock, chain.head());
      for (let n = fromBlock; n <= last; n++) {
        if (n > fromBlock) yield;
        for (const log of chain.logs({ ...req.filter, fromBlock: n, toBlock: n })) out.push(log);
      }
      yield;
      return JSON.stringify(out);
    }
  }
}

/**
 * GeneratorTurns decides whose step the generator takes next. Requests that have not had a step
 * yet (fresh) and requests under way (started) alternate: a fresh request waits for the fresh ones
 * ahead of it and at most one step of a started one, however many long ranges are under way; a
 * request under way gets at least every other step, however many fresh requests keep arriving;
 * started requests take turns round-robin. A request for one block is one step, so it is answered
 * at its first turn; a range goes back to the started line after each step.
 */
export class GeneratorTurns<J> {
  private readonly fresh: J[] = [];
  private readonly started: J[] = [];
  private lastWasFresh = false;

  get size(): number {
    return this.fresh.length + this.started.length;
  }

  /** add: a request arrived. */
  add(job: J): void {
    this.fresh.push(job);
  }

  /** next: the request whose step comes now (taken out: give it back with `stepped` unless it is done). */
  next(): J | undefined {
    const fromFresh = this.fresh.length > 0 && (!this.lastWasFresh || this.started.length === 0);
    this.lastWasFresh = fromFresh;
    return fromFresh ? this.fresh.shift() : this.started.shift();
  }

  /** stepped: a request had its step and is not done; it waits for its next turn behind the others under way. */
  stepped(job: J): void {
    this.started.push(job);
  }
}
