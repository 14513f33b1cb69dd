"""Readable chain reads for user functions: ``ctx.blockdb``, ``ctx.rpc`` and ``ctx.meta``.

Each method is a thin wrapper over ``ctx.io``: in a ``def`` entry it returns the value, in an
``async def`` entry an awaitable (``await ctx.blockdb.block(n)``). Values have the Ethereum
JSON-RPC shape (hex quantities, lowercase hex strings) whether the chain is a real node or the
local test chain. ``chain`` defaults to the call input's ``chain`` (block and bundle calls
carry one). A failure raises ``BackendError``; a node's JSON-RPC error raises ``JsonRpcError``
(a ``BackendError`` with the node's ``code``).
"""


def default_chain(args):
    """default_chain is the ``chain`` of a block or bundle call's input, if any."""
    if isinstance(args, dict):
        chain = args.get("chain")
        if isinstance(chain, str) and chain:
            return chain
    return None


class _ChainBound:
    __slots__ = ("_ctx", "_chain")

    def __init__(self, ctx, chain) -> None:
        self._ctx = ctx
        self._chain = chain

    def _chain_of(self, chain, what: str) -> str:
        chosen = chain if chain is not None else self._chain
        if not isinstance(chosen, str) or not chosen:
            raise TypeError(f"{what}: chain= is required (this call's input names no chain)")
        return chosen


class BlockDb(_ChainBound):
    """BlockDb reads blocks, receipts and logs through the ``blockdb`` backend. ``number`` is
    an int, a 0x hex string or a tag ("latest", "finalized", "safe", "earliest", "pending");
    numbered reads below the finality depth are cached by the Worker, tags never are."""

    __slots__ = ()

    def block(self, number, full=True, chain=None):
        """block returns the block (a dict, or None past the head); ``full=True`` gives full
        transaction objects, ``full=False`` their hashes."""
        return self._ctx.io("blockdb", "block", {"chain": self._chain_of(chain, "ctx.blockdb.block"), "number": number, "full": bool(full)})

    def receipts(self, number, chain=None):
        """receipts returns the block's transaction receipts, in transaction order (each with
        its ``logs``), or None past the head."""
        return self._ctx.io("blockdb", "receipts", {"chain": self._chain_of(chain, "ctx.blockdb.receipts"), "number": number})

    def logs(self, from_block, to_block, address=None, topics=None, chain=None):
        """logs returns the logs of blocks ``from_block``..``to_block`` (inclusive, at most
        10,000 blocks), filtered by ``address`` (one or a list: any of them) and ``topics``
        (positional; None = any, a list = any of those topics)."""
        params = {"chain": self._chain_of(chain, "ctx.blockdb.logs"), "fromBlock": from_block, "toBlock": to_block}
        if address is not None:
            params["address"] = address
        if topics is not None:
            params["topics"] = list(topics)
        return self._ctx.io("blockdb", "logs", params)

    def head(self, chain=None):
        """head returns the chain's current head block number (an int; never cached)."""
        return self._ctx.io("blockdb", "head", {"chain": self._chain_of(chain, "ctx.blockdb.head")})


class Rpc(_ChainBound):
    """Rpc sends JSON-RPC requests to the chain's node through the ``rpc`` backend (requests
    of one suspension to one node go out as one JSON-RPC batch)."""

    __slots__ = ()

    def call(self, method, *params, chain=None):
        """call runs a read method, e.g. ``ctx.rpc.call("eth_getBalance", addr, "0x10")``, and
        returns its result; a node error raises JsonRpcError. State-changing methods
        (eth_send*, eth_sign*, ...) are refused: they are writes."""
        if not isinstance(method, str) or not method:
            raise TypeError(f"ctx.rpc.call: method must be a non-empty string, not {method!r}")
        return self._ctx.io("rpc", "call", {"chain": self._chain_of(chain, "ctx.rpc.call"), "method": method, "params": list(params)})


class Meta:
    """Meta reads the Worker's Function Code View (functions by name) through ``meta``."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx) -> None:
        self._ctx = ctx

    def get_function(self, name):
        """get_function returns {name, digest, source, entry, epoch} of a named function."""
        return self._ctx.io("meta", "getFunction", {"name": name})

    def list_functions(self):
        """list_functions returns {epoch, functions: [{name, digest}, ...]}."""
        return self._ctx.io("meta", "listFunctions", {})
