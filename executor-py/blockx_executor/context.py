"""The ``ctx`` object user functions receive.

In a ``def`` entry, SyncContext methods block the call's thread until the pool answers
(``CallWaiting`` ... ``ResumeCall``). In an ``async def`` entry, AsyncContext methods return a
Suspension: awaiting it yields the Suspension itself to the engine's driver, which sends the
CallWaiting, parks the coroutine and sends the ResumeCall's results back in.
"""

import time

from .chain_api import BlockDb, LogicalTypes, Meta, Rpc
from .errors import SubCallError, backend_error
from .shared_store import bytes_request, read_mapped

LOG_LEVELS = frozenset(("debug", "info", "warning", "error"))


def io_request(backend, op, params=None) -> dict:
    if not isinstance(backend, str) or not backend:
        raise TypeError(f"ctx.io: backend must be a non-empty string, not {backend!r}")
    if not isinstance(op, str) or not op:
        raise TypeError(f"ctx.io: op must be a non-empty string, not {op!r}")
    return {"kind": "io", "backend": backend, "op": op, "params": params}


def _io_item(item) -> dict:
    if isinstance(item, dict):
        return io_request(item.get("backend"), item.get("op"), item.get("params"))
    if isinstance(item, (tuple, list)) and len(item) in (2, 3):
        return io_request(*item)
    raise TypeError(f"ctx.io_many: each request must be (backend, op) or (backend, op, params), not {item!r}")


def function_ref(function) -> dict:
    if isinstance(function, str) and function:
        return {"name": function}
    if isinstance(function, dict):
        source = function.get("source")
        if isinstance(source, str):
            entry = function.get("entry", "main")
            if not isinstance(entry, str) or not entry:
                raise TypeError(f"ctx.call: entry must be a non-empty string, not {entry!r}")
            return {"source": source, "entry": entry}
        name = function.get("name")
        if isinstance(name, str) and name:
            if "entry" not in function:
                return {"name": name}
            entry = function["entry"]
            if not isinstance(entry, str) or not entry:
                raise TypeError(f"ctx.call: entry must be a non-empty string, not {entry!r}")
            return {"name": name, "entry": entry}
    raise TypeError('ctx.call: function must be a name, {"name": ..., "entry": ...} or {"source": ..., "entry": ...}, not ' + repr(function)[:200])


def call_request(function, args=None) -> dict:
    return {"kind": "call", "function": function_ref(function), "args": args}


def _call_item(item) -> dict:
    if isinstance(item, (tuple, list)) and len(item) in (1, 2):
        return call_request(*item)
    if isinstance(item, (str, dict)):
        return call_request(item)
    raise TypeError(f"ctx.call_many: each call must be (function, args), not {item!r}"[:300])


def _failure(result) -> dict:
    if isinstance(result, dict):
        error = result.get("error")
        if isinstance(error, dict):
            return error
    return {"type": "INTERNAL", "message": f"malformed result from the pool: {result!r}"[:500]}


def unwrap_io(result):
    """unwrap_io returns an IO result's value or raises BackendError."""
    if type(result) is dict and result.get("ok") is True:
        if "mapped" in result:
            # read_mapped could not read it, and the answer to the request for bytes was a mapping again.
            raise backend_error("INTERNAL", "the pool answered with a block store mapping this executor cannot read", False)
        return result.get("value")
    error = _failure(result)
    raise backend_error(str(error.get("type", "UNKNOWN")), str(error.get("message", "")), error.get("retryable") is True)


def unwrap_call(result):
    """unwrap_call returns a sub-call's result or raises SubCallError."""
    if type(result) is dict and result.get("ok") is True:
        return result.get("value")
    error = _failure(result)
    raise SubCallError(str(error.get("type", "UNKNOWN")), str(error.get("message", "")), str(error.get("traceback", "") or ""))


def _unwrap_one_io(results):
    return unwrap_io(results[0])


def _unwrap_many_io(results):
    return [unwrap_io(r) for r in results]


def _unwrap_one_call(results):
    return unwrap_call(results[0])


def _unwrap_many_call(results):
    return [unwrap_call(r) for r in results]


class _Done:
    """_Done is what ctx.log returns: awaiting it finishes at once, so that both
    ``ctx.log(...)`` and ``await ctx.log(...)`` work in an async entry."""

    __slots__ = ()

    def __await__(self):
        return iter(())

    def __repr__(self) -> str:
        return "<done>"


_DONE = _Done()


class Suspension:
    """Suspension is an awaitable set of requests (one CallWaiting). The driver sends the
    ResumeCall's result list back in; ``unwrap`` turns it into the value of the await."""

    __slots__ = ("requests", "unwrap")

    def __init__(self, requests: list, unwrap) -> None:
        self.requests = requests
        self.unwrap = unwrap

    def __await__(self):
        if not self.requests:
            return []
        results = yield self
        missing = read_mapped(results) if type(results) is list else None
        if missing:
            again = yield Suspension([bytes_request(self.requests[i]) for i in missing], None)
            for i, r in zip(missing, again):
                results[i] = r
        return self.unwrap(results)

    def __repr__(self) -> str:
        return f"<blockx suspension of {len(self.requests)} request(s)>"


class _BaseContext:
    __slots__ = ("_call", "_chain")

    def __init__(self, call, chain=None) -> None:
        self._call = call
        self._chain = chain

    @property
    def blockdb(self) -> BlockDb:
        """blockdb: blocks, receipts and logs (see chain_api.BlockDb)."""
        return BlockDb(self, self._chain)

    @property
    def rpc(self) -> Rpc:
        """rpc: JSON-RPC requests to the chain's node (see chain_api.Rpc)."""
        return Rpc(self, self._chain)

    @property
    def logical_types(self) -> LogicalTypes:
        """logical_types: chain data decoded by ABI (see chain_api.LogicalTypes)."""
        return LogicalTypes(self, self._chain)

    @property
    def run(self):
        """run: the run of its task this call is part of, {"task_id": str, "generation": int}, for a
        task writing tables (a resubmitted task runs again as a new generation); None otherwise.
        A row stamped with it says which run computed it."""
        r = self._call.run
        return None if r is None else dict(r)

    @property
    def meta(self) -> Meta:
        """meta: functions by name from the Worker's Function Code View (see chain_api.Meta)."""
        return Meta(self)

    def log(self, message, level: str = "info"):
        """log adds a line to the call's logs (level: debug, info, warning or error)."""
        if level not in LOG_LEVELS:
            raise ValueError(f"ctx.log: level must be one of debug, info, warning, error, not {level!r}")
        self._call.add_log(int(time.time() * 1000), level, message if type(message) is str else str(message))
        return _DONE

    def __repr__(self) -> str:
        return f"<blockx ctx of call {self._call.id}>"


class SyncContext(_BaseContext):
    """SyncContext: ctx of a ``def`` entry; each request method blocks until the answer."""

    __slots__ = ("_suspend",)

    def __init__(self, call, suspend, chain=None) -> None:
        super().__init__(call, chain)
        self._suspend = suspend

    def _answers(self, requests):
        """_answers suspends for IO requests; a mapped answer is read from the shared block
        store, and one that cannot be is asked for again as bytes."""
        results = self._suspend(self._call, requests)
        missing = read_mapped(results)
        if missing:
            again = self._suspend(self._call, [bytes_request(requests[i]) for i in missing])
            for i, r in zip(missing, again):
                results[i] = r
        return results

    def io(self, backend, op, params=None):
        """io runs one IO request and returns its value (BackendError when it fails)."""
        return unwrap_io(self._answers([io_request(backend, op, params)])[0])

    def io_many(self, requests):
        """io_many runs several IO requests in one suspension and returns their values in
        order; the first failed one raises BackendError."""
        reqs = [_io_item(r) for r in requests]
        if not reqs:
            return []
        return [unwrap_io(r) for r in self._answers(reqs)]

    def call(self, function, args=None):
        """call runs another function (a name or {"source", "entry"}) and returns its result
        (SubCallError when it fails)."""
        return unwrap_call(self._suspend(self._call, [call_request(function, args)])[0])

    def call_many(self, calls):
        """call_many runs several functions in one suspension and returns their results in
        order; the first failed one raises SubCallError."""
        reqs = [_call_item(c) for c in calls]
        if not reqs:
            return []
        return [unwrap_call(r) for r in self._suspend(self._call, reqs)]


class AsyncContext(_BaseContext):
    """AsyncContext: ctx of an ``async def`` entry; request methods return awaitables."""

    __slots__ = ()

    def io(self, backend, op, params=None) -> Suspension:
        return Suspension([io_request(backend, op, params)], _unwrap_one_io)

    def io_many(self, requests) -> Suspension:
        return Suspension([_io_item(r) for r in requests], _unwrap_many_io)

    def call(self, function, args=None) -> Suspension:
        return Suspension([call_request(function, args)], _unwrap_one_call)

    def call_many(self, calls) -> Suspension:
        return Suspension([_call_item(c) for c in calls], _unwrap_many_call)
