import { describe, expect, test } from "bun:test";
import { SyntheticChains } from "./synthetic-chain-jobs";

describe("SyntheticChains", () => {
  test("a function naming more chains than kept: the least recently used is dropped, and asked again gives the same blocks", () => {
    const chains = new SyntheticChains(1_000, 3);
    const first = chains.of("a").block(5, false);
    chains.of("b");
    chains.of("c");
    chains.of("a"); // used again: now the most recent
    chains.of("d"); // drops b, the least recently used
    expect(chains.size).toBe(3);
    expect(chains.dropped).toBe(1);
    for (let i = 0; i < 100; i++) chains.of(`x${i}`);
    expect(chains.size).toBe(3);
    expect(chains.dropped).toBe(101);
    // A chain is a pure function of its name: regenerated after its drop, block for block.
    expect(chains.of("a").block(5, false)).toEqual(first);
  });
});
