import type { FollowLedger } from "../../src/follow/adapters/follow-ledger";
import type { AnvilNode } from "./anvil";

/**
 * canonicalLag: how far a followed table is behind anvil: the node's head minus the highest block
 * the table's scope ledger holds that is still canonical, looking back `depth` + 2 blocks (a block
 * orphaned and not yet rewound counts as behind).
 */
export async function canonicalLag(anvil: AnvilNode, ledger: FollowLedger, depth: number): Promise<number> {
  const head = await anvil.head();
  const tail = await ledger.tail(depth + 2);
  for (let i = tail.length - 1; i >= 0; i--) {
    const b = tail[i]!;
    if (b.hash !== null && b.hash === (await anvil.hashAt(b.number))) return Math.max(0, head - b.number);
  }
  return Math.max(0, head - ((tail[0]?.number ?? 1) - 1));
}
