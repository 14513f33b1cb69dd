"""block_summary: the per-block sub-call of range_summary (also callable on its own)."""

TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"


def main(ctx, input):
    params = {"chain": input["chain"], "number": input["blockNumber"]}
    # Both reads in one suspension: ctx.io_many with the blockdb backend's ops (what
    # ctx.blockdb.block and ctx.blockdb.receipts send), on the local chain or a real node alike.
    block, receipts = ctx.io_many(
        [
            ("blockdb", "block", {**params, "full": False}),
            ("blockdb", "receipts", params),
        ]
    )
    transfers = sum(1 for r in receipts for log in r["logs"] if log["topics"] and log["topics"][0] == TRANSFER_TOPIC)
    return {
        "block": input["blockNumber"],
        "tx_count": len(block["transactions"]),
        "gas_used": int(block["gasUsed"], 16),
        "transfers": transfers,
    }
