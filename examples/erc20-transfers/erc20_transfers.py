"""ERC-20 Transfer events decoded by ABI: one row per Transfer into a block table.

Run once per bundle of blocks (a block_bundle call config): input = {"chain", "fromBlock",
"toBlock"}. ``ctx.logical_types.logs_of`` reads the bundle's Transfer logs (one eth_getLogs on a
node, filtered on the event's topic0) and decodes them by the ABI in the same request: addresses
come back EIP-55 checksummed and the uint256 amount as an exact Python int. It reads the local
test chain or a real node (CHAINS_CONFIG) with the same code.
"""

ERC20_ABI = [
    "event Transfer(address indexed from, address indexed to, uint256 value)",
]


def main(ctx, input):
    decoded = ctx.logical_types.logs_of(input["fromBlock"], ERC20_ABI, events=["Transfer"], to_block=input["toBlock"])
    rows = []
    for log in decoded:
        # ERC-721 transfers share the Transfer topic0 but index the token id too (4 topics): the
        # ERC-20 event does not fit them, and they come back with ``error`` set instead of args.
        if log["error"] is not None:
            continue
        args = log["args"]
        rows.append(
            {
                "block": log["blockNumber"],
                "log_index": log["logIndex"],
                "tx_hash": log["transactionHash"],
                "token": log["address"],
                "from_address": args["from"],
                "to_address": args["to"],
                # An exact int up to 2**256 - 1; written as its decimal digits, which every table
                # store keeps exactly (an SQLite integer holds only 64 bits).
                "amount": str(args["value"]),
            }
        )
    return rows
