"""ERC-20 Transfer events decoded from logs: one row per Transfer into a block table.

Run once per bundle of blocks (a block_bundle call config): input = {"chain", "fromBlock",
"toBlock"}. One logs request per bundle (eth_getLogs on a node), filtered on the Transfer topic,
is far cheaper than a request per block. ctx.blockdb reads the local test chain or a real node
(CHAINS_CONFIG), with the same code.
"""

TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"


def address_of(topic):
    """address_of: an indexed address is the last 20 bytes of its 32-byte topic."""
    return "0x" + topic[-40:]


def main(ctx, input):
    logs = ctx.blockdb.logs(input["fromBlock"], input["toBlock"], topics=[TRANSFER_TOPIC])
    rows = []
    for log in logs:
        # Transfer(address indexed from, address indexed to, uint256 value). ERC-721 transfers
        # share topic0 but index the token id too (4 topics): they are not ERC-20.
        if len(log["topics"]) != 3:
            continue
        rows.append(
            {
                "block": int(log["blockNumber"], 16),
                "log_index": int(log["logIndex"], 16),
                "tx_hash": log["transactionHash"],
                "token": log["address"],
                "from_address": address_of(log["topics"][1]),
                "to_address": address_of(log["topics"][2]),
                # uint256 does not fit an SQLite integer: kept as a decimal string.
                "amount": str(int(log["data"], 16)),
            }
        )
    return rows
