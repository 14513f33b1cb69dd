"""blockx.Context: the typed ``ctx`` a function receives, for editors and type checkers.

    from blockx import Context

    def main(ctx: Context, input: dict) -> list[dict]:
        block = ctx.blockdb.block(input["blockNumber"])
        return [{"block": input["blockNumber"], "txs": len(block["transactions"])}]

The executor (executor-py/blockx_executor/context.py) passes an object with exactly these
methods and signatures (a test holds them together). In an ``async def`` entry each request
method returns an awaitable of the same value. Guide: docs/functions.md.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple, Union, runtime_checkable

#: A JSON value as the runtime carries it.
JSON = Any
#: A function named in FUNCTIONS_DIR, or inline code: {"source": ..., "entry": "main"}.
FunctionSpec = Union[str, Mapping[str, str]]
#: One IO request of io_many: (backend, op), (backend, op, params) or {"backend", "op", "params"}.
IoRequest = Union[Tuple[str, str], Tuple[str, str, Optional[Mapping[str, JSON]]], Mapping[str, JSON]]
#: One sub-call of call_many: (function, args) or just function.
CallSpec = Union[FunctionSpec, Tuple[FunctionSpec, JSON]]


@runtime_checkable
class BlockDb(Protocol):
    """ctx.blockdb: blocks, receipts and logs in Ethereum JSON-RPC shapes (hex quantities).
    ``chain=None`` means the call input's ``chain``. Each is exactly one ``ctx.io`` request."""

    def block(self, number: int, full: bool = True, chain: Optional[str] = None) -> Dict[str, JSON]:
        """block: the block (full transactions, or hashes with ``full=False``)."""
        ...

    def receipts(self, number: int, chain: Optional[str] = None) -> List[Dict[str, JSON]]:
        """receipts: the block's receipts (eth_getBlockReceipts)."""
        ...

    def logs(self, from_block: int, to_block: int, address: Optional[Union[str, Sequence[str]]] = None,
             topics: Optional[Sequence[Optional[Union[str, Sequence[str]]]]] = None, chain: Optional[str] = None) -> List[Dict[str, JSON]]:
        """logs: eth_getLogs over from_block..to_block (inclusive), filtered by address and topics."""
        ...

    def headers(self, from_block: int, to_block: int, chain: Optional[str] = None) -> List[Dict[str, JSON]]:
        """headers: ``{"number", "hash", "parentHash"}`` of from_block..to_block, parent links checked."""
        ...

    def head(self, chain: Optional[str] = None) -> int:
        """head: the chain's current head block number (never cached)."""
        ...


@runtime_checkable
class Rpc(Protocol):
    """ctx.rpc: JSON-RPC read requests to the chain's node."""

    def call(self, method: str, *params: JSON, chain: Optional[str] = None) -> JSON:
        """call: e.g. ``ctx.rpc.call("eth_getBalance", addr, "0x10")``; a node error raises
        ``blockx_executor.JsonRpcError``; state-changing methods are refused."""
        ...


@runtime_checkable
class LogicalTypes(Protocol):
    """ctx.logical_types: chain data decoded by a contract ABI (a JSON ABI or human-readable
    lines); integers as exact ints, addresses EIP-55, bytes as 0x hex. Each is one ``ctx.io``."""

    def decode_logs(self, abi: Sequence[JSON], logs: Sequence[Mapping[str, JSON]]) -> List[Dict[str, JSON]]:
        """decode_logs: per log {event, signature, address, args, blockNumber, transactionHash,
        transactionIndex, logIndex, error}; an undecodable log has event None and the reason."""
        ...

    def logs_of(self, block: int, abi: Sequence[JSON], events: Optional[Union[str, Sequence[str]]] = None,
                address: Optional[Union[str, Sequence[str]]] = None, to_block: Optional[int] = None,
                chain: Optional[str] = None) -> List[Dict[str, JSON]]:
        """logs_of: the logs of block (..to_block) read and decoded in one request."""
        ...

    def decode_call(self, abi: Sequence[JSON], input: str) -> Dict[str, JSON]:
        """decode_call: {function, signature, selector, args} of a transaction input."""
        ...

    def decode_result(self, abi: Sequence[JSON], fn: str, output: str) -> JSON:
        """decode_result: the decoded eth_call output of function fn."""
        ...

    def event_signature(self, text: str) -> str:
        """event_signature: the Keccak-256 topic0 of an event signature."""
        ...

    def function_selector(self, text: str) -> str:
        """function_selector: the 4-byte selector of a function signature."""
        ...


@runtime_checkable
class Meta(Protocol):
    """ctx.meta: functions by name from the Worker's Function Code View."""

    def get_function(self, name: str) -> Dict[str, JSON]:
        """get_function: {name, digest, source, entry, epoch}."""
        ...

    def list_functions(self) -> Dict[str, JSON]:
        """list_functions: {epoch, functions: [{name, digest}, ...]}."""
        ...


@runtime_checkable
class Context(Protocol):
    """Context: what a function may call on ``ctx``. All IO goes back to the Worker; a failed
    request raises ``blockx_executor.BackendError`` (``.type``, ``.message``, ``.retryable``), a
    failed sub-call ``blockx_executor.SubCallError`` (``.code``, ``.message``, ``.traceback``)."""

    @property
    def blockdb(self) -> BlockDb:
        """blockdb: blocks, receipts and logs."""
        ...

    @property
    def rpc(self) -> Rpc:
        """rpc: JSON-RPC requests to the chain's node."""
        ...

    @property
    def logical_types(self) -> LogicalTypes:
        """logical_types: logs, calls and results decoded by ABI."""
        ...

    @property
    def meta(self) -> Meta:
        """meta: functions by name."""
        ...

    @property
    def run(self) -> Optional[Dict[str, JSON]]:
        """run: ``{"task_id", "generation"}`` of the run this call is part of (a task writing tables;
        a resubmission runs as a new generation), or None: stamp a row with it to say which run computed it."""
        ...

    def io(self, backend: str, op: str, params: Optional[Mapping[str, JSON]] = None) -> JSON:
        """io: one IO request (e.g. ``ctx.io("localtestservice", "eth_getBlockByNumber",
        {"chain": "ethereum", "number": 5, "full": False})``), one suspension."""
        ...

    def io_many(self, requests: Sequence[IoRequest]) -> List[JSON]:
        """io_many: several IO requests in one suspension; values in order; the first failure raises."""
        ...

    def call(self, function: FunctionSpec, args: JSON = None) -> JSON:
        """call: run another function (a name, or {"source", "entry"}) as a sub-call; its result."""
        ...

    def call_many(self, calls: Sequence[CallSpec]) -> List[JSON]:
        """call_many: several sub-calls in one suspension; results in order; the first failure raises."""
        ...

    def log(self, message: Any, level: str = "info") -> Any:
        """log: a line in the call's logs (level debug, info, warning or error); awaitable too."""
        ...
