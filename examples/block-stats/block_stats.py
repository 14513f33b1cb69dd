"""Per-block statistics: one row per block into a block table.

Run once per block (a block_table call config): input = {"chain": ..., "blockNumber": ...}.
The rows replace the block's earlier rows, so a rerun over the same range never duplicates.
Chain data comes through ctx.blockdb: the local test chain by default, a real node when
CHAINS_CONFIG names one for the chain; the function is the same either way.
"""


def main(ctx, input):
    # The chain is the call input's "chain"; full=False: transaction hashes only.
    block = ctx.blockdb.block(input["blockNumber"], full=False)
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
