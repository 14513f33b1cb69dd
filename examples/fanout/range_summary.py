"""A fan-out with sub-calls: summarise block ranges, one sub-call per block.

Run once per input (an inputs call config): input = {"chain", "fromBlock", "toBlock"}. The
function calls block_summary (another function of FUNCTIONS_DIR, by name) for every block
of its range in one suspension (ctx.call_many), so the sub-calls run in parallel on the
Worker's executors, then returns the totals: the task's return values, in input order.
"""


def main(ctx, input):
    chain, first, last = input["chain"], input["fromBlock"], input["toBlock"]
    if last < first:
        raise ValueError(f"empty range {first}..{last}")
    per_block = ctx.call_many(
        [("block_summary", {"chain": chain, "blockNumber": n}) for n in range(first, last + 1)]
    )
    busiest = max(per_block, key=lambda s: (s["tx_count"], -s["block"]))
    return {
        "fromBlock": first,
        "toBlock": last,
        "blocks": len(per_block),
        "tx_count": sum(s["tx_count"] for s in per_block),
        "gas_used": sum(s["gas_used"] for s in per_block),
        "transfers": sum(s["transfers"] for s in per_block),
        "busiest_block": busiest["block"],
    }
