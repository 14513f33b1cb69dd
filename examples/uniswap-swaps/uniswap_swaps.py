"""Uniswap-V2-style swaps decoded by ABI: one row per Swap, with the pair's reserves after it.

Run once per bundle of blocks (a block_bundle call config): input = {"chain", "fromBlock",
"toBlock"}. One ``ctx.logical_types.logs_of`` request reads and decodes the bundle's ``Swap`` and
``Sync`` logs; a pair emits ``Sync`` (its new reserves) just before each ``Swap`` of the same
transaction, so each swap row carries the reserves it left. Amounts are exact ints, written as
decimal strings.
"""

PAIR_ABI = [
    "event Swap(address indexed sender, uint256 amount0In, uint256 amount1In, uint256 amount0Out, uint256 amount1Out, address indexed to)",
    "event Sync(uint112 reserve0, uint112 reserve1)",
]


def main(ctx, input):
    decoded = ctx.logical_types.logs_of(input["fromBlock"], PAIR_ABI, events=["Swap", "Sync"], to_block=input["toBlock"])
    reserves = {}
    rows = []
    for log in decoded:
        if log["error"] is not None:
            ctx.log(f"undecodable log {log['transactionHash']}#{log['logIndex']}: {log['error']}", level="warning")
            continue
        args = log["args"]
        if log["event"] == "Sync":
            reserves[(log["transactionHash"], log["address"])] = (args["reserve0"], args["reserve1"])
            continue
        reserve0, reserve1 = reserves.get((log["transactionHash"], log["address"]), (None, None))
        rows.append(
            {
                "block": log["blockNumber"],
                "log_index": log["logIndex"],
                "tx_hash": log["transactionHash"],
                "pair": log["address"],
                "sender": args["sender"],
                "to_address": args["to"],
                "amount0_in": str(args["amount0In"]),
                "amount1_in": str(args["amount1In"]),
                "amount0_out": str(args["amount0Out"]),
                "amount1_out": str(args["amount1Out"]),
                "reserve0": None if reserve0 is None else str(reserve0),
                "reserve1": None if reserve1 is None else str(reserve1),
            }
        )
    return rows
