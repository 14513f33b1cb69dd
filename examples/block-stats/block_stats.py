"""Per-block statistics: one row per block into a block table.

Run once per block (a block_table call config): input = {"chain": ..., "blockNumber": ...}.
The rows replace the block's earlier rows, so a rerun over the same range never duplicates.
"""


def main(ctx, input):
    block = ctx.io(
        "localtestservice",
        "eth_getBlockByNumber",
        {"chain": input["chain"], "number": input["blockNumber"], "full": False},
    )
    gas_used = int(block["gasUsed"], 16)
    gas_limit = int(block["gasLimit"], 16)
    return [
        {
            "block": int(block["number"], 16),
            "timestamp": int(block["timestamp"], 16),
            "tx_count": len(block["transactions"]),
            "gas_used": gas_used,
            "gas_limit": gas_limit,
            # Parts per million of the limit: an integer, so the column stays exact.
            "gas_used_ppm": gas_used * 1_000_000 // gas_limit,
            "base_fee_per_gas": int(block["baseFeePerGas"], 16),
        }
    ]
