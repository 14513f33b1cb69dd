"""blockx.function: one spelling for running a function now, in a client or inside a function.

    import blockx

    stats = blockx.function("block_stats", entry="main")     # a name in FUNCTIONS_DIR, or a .py file
    value = stats.call({"chain": "ethereum", "blockNumber": 5})
    values = stats.call_many([{"chain": "ethereum", "blockNumber": n} for n in range(5, 10)])

Outside an executor (a script, a notebook, a service) ``call`` runs the function on the Sync
Invoker (``Client.invoke``, with ``Client.from_env()`` unless a client is given). Inside an
executor (the code of a running function) it is a sub-call (``ctx.call``) of the call running on
this thread: depth-limited, within what remains of that call's budget, cancelled with it. Either
way ``call`` returns the function's JSON value and raises ``CallFailed`` (``error_code``,
``error_message``, ``traceback``) when the function fails, ``BlockxError`` with ``NOT_FOUND`` for
an unknown name and ``INVALID_ARGUMENT`` for a bad request. In an ``async def`` entry ``call``
and ``call_many`` return awaitables of the same values. Guide: docs/functions.md.
"""
from __future__ import annotations

import json
import os
import re
import sys
from typing import TYPE_CHECKING, Any, Awaitable, Dict, List, Optional, Sequence, Union

from .errors import BlockxError, CallFailed

if TYPE_CHECKING:
    from .client import Client

JSON = Any

#: call_many takes at most this many inputs at once (a longer list is INVALID_ARGUMENT).
MAX_CALL_MANY = 1024
#: Outside an executor, call_many runs at most this many Invokes at once.
CLIENT_CALLS_IN_FLIGHT = 8

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_MISSING_IN_EXECUTOR = "FUNCTION_NOT_FOUND"

_default_client: Optional["Client"] = None


def _bad(msg: str) -> BlockxError:
    return BlockxError("INVALID_ARGUMENT", msg)


def function(name_or_file: Union[str, "os.PathLike[str]"], entry: str = "main", *, client: Optional["Client"] = None,
             timeout_ms: int = 0) -> "Function":
    """function: the function ``name_or_file`` (a name in FUNCTIONS_DIR, or a path to a .py file,
    whose source travels inline) with its ``entry``, ready to ``call``. ``client``: the Client
    used outside an executor (default: one ``Client.from_env()`` shared by every Function);
    ``timeout_ms``: the call's budget there (0: the Sync Invoker's default). Bad arguments raise
    BlockxError INVALID_ARGUMENT at once."""
    return Function(name_or_file, entry, client=client, timeout_ms=timeout_ms)


class Function:
    """Function: a function to run now, through the Sync Invoker or as a sub-call (see the module)."""

    __slots__ = ("name", "path", "entry", "timeout_ms", "_client")

    def __init__(self, name_or_file: Union[str, "os.PathLike[str]"], entry: str = "main", *, client: Optional["Client"] = None,
                 timeout_ms: int = 0) -> None:
        if not isinstance(name_or_file, (str, os.PathLike)):
            raise _bad(f"blockx.function: expected a function name or a .py file path, not {type(name_or_file).__name__}")
        spec = os.fspath(name_or_file)
        if not isinstance(entry, str) or not entry.isidentifier():
            raise _bad(f"blockx.function: entry must be a Python identifier, not {entry!r}")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 0:
            raise _bad(f"blockx.function: timeout_ms must be an integer >= 0, not {timeout_ms!r}")
        is_file = spec.endswith(".py") or os.sep in spec
        if is_file and not os.path.isfile(spec):
            raise _bad(f"blockx.function: {spec!r} is not a readable .py file")
        if not is_file and not _NAME.match(spec):
            raise _bad(f"blockx.function: {spec!r} is neither a .py file nor a function name")
        #: The function's name in FUNCTIONS_DIR, or None for a file.
        self.name: Optional[str] = None if is_file else spec
        #: The .py file whose source is sent, or None for a name.
        self.path: Optional[str] = spec if is_file else None
        self.entry = entry
        self.timeout_ms = timeout_ms
        self._client = client

    def __repr__(self) -> str:
        return f"<blockx.Function {self.name or self.path}:{self.entry}>"

    def call(self, args: JSON = None) -> Union[JSON, Awaitable[JSON]]:
        """call runs the function once with ``args`` and returns its value (see the module)."""
        payload = _json_text(args)
        ctx = _executor_context()
        if ctx is not None:
            ref = self._ref()
            return _settled(lambda: ctx.call(ref, args), [payload])
        return self._invoke(args, payload)

    def call_many(self, args_list: Sequence[JSON]) -> Union[List[JSON], Awaitable[List[JSON]]]:
        """call_many runs the function once per element of ``args_list`` (at most MAX_CALL_MANY) at
        once and returns their values in order; the first failed one raises (its CallFailed names
        no ``call_input``: inside an executor which call failed first is not known)."""
        if isinstance(args_list, (str, bytes, dict)) or not isinstance(args_list, Sequence):
            raise _bad(f"call_many: expected a list of arguments, not {type(args_list).__name__}")
        if len(args_list) > MAX_CALL_MANY:
            raise _bad(f"call_many: at most {MAX_CALL_MANY} calls at once, got {len(args_list)}")
        payloads = [_json_text(a) for a in args_list]
        ctx = _executor_context()
        if ctx is not None:
            ref = self._ref()
            return _settled(lambda: ctx.call_many([(ref, a) for a in args_list]), payloads)
        if not args_list:
            return []
        from concurrent.futures import ThreadPoolExecutor  # not at import: executors start no threads of ours
        with ThreadPoolExecutor(max_workers=min(CLIENT_CALLS_IN_FLIGHT, len(args_list))) as pool:
            try:
                return list(pool.map(self._invoke, args_list, payloads))
            except CallFailed as e:
                # As inside an executor, where ctx.call_many does not say which call failed first.
                raise CallFailed(e.error_code, e.error_message, e.traceback, call_id=e.call_id) from None

    def _ref(self) -> Dict[str, str]:
        if self.name is not None:
            return {"name": self.name, "entry": self.entry}
        try:
            with open(self.path, encoding="utf-8") as f:  # type: ignore[arg-type]
                return {"source": f.read(), "entry": self.entry}
        except OSError as e:
            raise _bad(f"blockx.function: cannot read {self.path!r}: {e.strerror}") from None

    def _invoke(self, args: JSON, payload: str) -> JSON:
        client = self._client or _shared_client()
        return client.invoke(self.name, args, entry=self.entry, timeout_ms=self.timeout_ms) if self.name is not None else \
            client.invoke(self.path, args, entry=self.entry, timeout_ms=self.timeout_ms)


def _json_text(args: JSON) -> str:
    try:
        return json.dumps(args, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise _bad(f"args is not JSON: {e}") from None


def _shared_client() -> "Client":
    global _default_client
    if _default_client is None:
        from .client import Client  # not at import: an executor has no use for gRPC
        _default_client = Client.from_env()
    return _default_client


def _executor_context():
    """_executor_context: the ctx of the call running on this thread (inside an executor, or a
    call that blockx.testing runs here), None in a client (which may have imported
    blockx_executor for its own reasons); inside an executor but outside a call (a module body)
    is a usage error."""
    executor = sys.modules.get("blockx_executor")
    if executor is None:
        return None
    ctx = executor.current_context()
    if ctx is None:
        serving = getattr(executor, "serving", None)
        if serving is None or not serving():
            return None
        raise _bad("Function.call inside an executor runs only while a call runs (in the entry, not at import)")
    return ctx


def _translated(e: BaseException, payloads: List[str]) -> BaseException:
    """_translated: a sub-call's failure as the Sync Invoker path reports the same failure."""
    code = getattr(e, "code", None)
    if not isinstance(code, str) or type(e).__name__ != "SubCallError":
        return e
    message = getattr(e, "message", "")
    if code == _MISSING_IN_EXECUTOR:
        return BlockxError("NOT_FOUND", message)
    if code == "INVALID_ARGUMENT":
        return _bad(message)
    return CallFailed(code, message, getattr(e, "traceback", ""), call_input=payloads[0] if len(payloads) == 1 else None)


def _settled(ask, payloads: List[str]):
    """_settled: ctx's answer (a value, or an awaitable in an async entry) with its failure translated."""
    try:
        answer = ask()
    except Exception as e:
        raise _translated(e, payloads) from None
    if hasattr(answer, "__await__"):
        return _awaited(answer, payloads)
    return answer


async def _awaited(answer, payloads: List[str]):
    try:
        return await answer
    except Exception as e:
        raise _translated(e, payloads) from None
