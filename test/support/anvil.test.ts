/**
 * The anvil helper: a real node on a free port that reorganises when asked, and is gone after stop.
 */
import { expect, test } from "bun:test";
import { AnvilNode } from "./anvil";

test("anvil starts on a free port with the chain id asked, reorganises and rolls back on request, and is gone after stop", async () => {
  const a = await AnvilNode.start({ chainId: 4242 });
  try {
    expect(await a.rpc("eth_chainId")).toBe("0x" + (4242).toString(16));
    await a.mine(5);
    expect(await a.head()).toBe(5);
    const before = await a.block(5);
    await a.reorg(2);
    const after = await a.block(5);
    expect(await a.head()).toBe(5);
    expect(after.hash).not.toBe(before.hash);
    expect((await a.block(3)).hash).toBe((await a.block(4)).parentHash);
    await a.rollback(1);
    expect(await a.head()).toBe(4);
  } finally {
    await a.stop();
  }
  await expect(fetch(a.url, { method: "POST", body: "{}" })).rejects.toThrow();
});
