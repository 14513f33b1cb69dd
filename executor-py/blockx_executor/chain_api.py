"""Readable chain reads for user functions: ``ctx.blockdb``, ``ctx.rpc``, ``ctx.logical_types`` and ``ctx.meta``.

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
        """block returns the block (a dict); ``full=True`` gives full transaction objects,
        ``full=False`` their hashes. A block the node does not have (past its head) raises a
        retryable BackendError ``BlockUnavailable``; an answer about another block
        ``NodeAnswerMismatch``."""
        return self._ctx.io("blockdb", "block", {"chain": self._chain_of(chain, "ctx.blockdb.block"), "number": number, "full": bool(full)})

    def receipts(self, number, chain=None):
        """receipts returns the block's transaction receipts, in transaction order (each with
        its ``logs``); past the head a retryable BackendError ``BlockUnavailable``."""
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

    def headers(self, from_block, to_block, chain=None):
        """headers returns ``{"number", "hash", "parentHash"}`` of blocks ``from_block``..``to_block``
        (at most 10,000), each linked to the one before (else ``NodeAnswerMismatch``)."""
        return self._ctx.io("blockdb", "headers", {"chain": self._chain_of(chain, "ctx.blockdb.headers"), "fromBlock": from_block, "toBlock": to_block})

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


class LogicalTypes(_ChainBound):
    """LogicalTypes decodes chain data by a contract ABI through the ``logicalTypes`` backend.

    ``abi`` is a JSON ABI (a list of dicts, as solc or a block explorer gives it) or a list of
    human-readable lines such as ``"event Transfer(address indexed from, address indexed to,
    uint256 value)"``. Decoded values: uint/int of any size as exact Python ints, addresses
    EIP-55 checksummed, bytes and bytesN as 0x hex, bool, str, tuples as dicts (by component
    name; lists when unnamed), arrays as lists. An indexed argument of a dynamic type (string,
    bytes, arrays, tuples) is only its Keccak-256 hash in the log, given as 0x hex.
    """

    __slots__ = ()

    def decode_logs(self, abi, logs):
        """decode_logs returns one dict per log, in order: ``event`` (name), ``signature``,
        ``address``, ``args`` (dict by argument name), ``blockNumber``, ``transactionHash``,
        ``transactionIndex``, ``logIndex`` and ``error``. A log no event of the ABI fits has
        ``event`` None and ``error`` saying why; the others still decode."""
        return self._ctx.io("logicalTypes", "decodeLogs", {"abi": abi, "logs": list(logs)})

    def logs_of(self, block, abi, events=None, address=None, to_block=None, chain=None):
        """logs_of reads the logs of ``block`` (through ``to_block``, inclusive, when given) and
        decodes them in one request, as ``decode_logs``. ``events`` (names or signatures)
        narrows the read to those events' topic0s (default: every event of the ABI);
        ``address`` to one contract or a list."""
        params = {
            "chain": self._chain_of(chain, "ctx.logical_types.logs_of"),
            "fromBlock": block,
            "toBlock": block if to_block is None else to_block,
            "abi": abi,
        }
        if events is not None:
            params["events"] = [events] if isinstance(events, str) else list(events)
        if address is not None:
            params["address"] = address
        return self._ctx.io("logicalTypes", "logsOf", params)

    def decode_call(self, abi, input):
        """decode_call decodes a transaction's input: ``{function, signature, selector,
        args}``; an unknown selector raises BackendError of type DecodeFailed."""
        return self._ctx.io("logicalTypes", "decodeCall", {"abi": abi, "input": input})

    def decode_result(self, abi, fn, output):
        """decode_result decodes what ``eth_call`` of function ``fn`` (a name, or a signature
        when overloaded) returned: one output is its value, several a dict by name (a list when
        unnamed), none is None."""
        return self._ctx.io("logicalTypes", "decodeResult", {"abi": abi, "function": fn, "output": output})

    def event_signature(self, text):
        """event_signature returns the Keccak-256 topic0 of an event, e.g.
        ``event_signature("Transfer(address,address,uint256)")``."""
        return self._ctx.io("logicalTypes", "eventSignature", {"text": text})

    def function_selector(self, text):
        """function_selector returns the 4-byte selector of a function, e.g.
        ``function_selector("transfer(address,uint256)") == "0xa9059cbb"``."""
        return self._ctx.io("logicalTypes", "functionSelector", {"text": text})
