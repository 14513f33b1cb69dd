"""blockx.Context and the executor's real ctx (executor-py/blockx_executor) have the same methods
with the same signatures, for def (SyncContext) and async def (AsyncContext) entries alike."""
import inspect
import os
import sys
import typing

from support import REPO

sys.path.insert(0, os.path.join(REPO, "executor-py"))

from blockx_executor import chain_api, context as real  # noqa: E402

import blockx  # noqa: E402
from blockx import context as typed  # noqa: E402


def public_methods(cls):
    return {n for n in dir(cls) if not n.startswith("_")}


def params(fn):
    """A signature reduced to what a caller sees: names, kinds and defaults (no annotations)."""
    sig = inspect.signature(fn)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def prop_or_fn(cls, name):
    attr = inspect.getattr_static(cls, name)
    return ("property", None) if isinstance(attr, property) else ("method", params(getattr(cls, name)))


def test_context_has_the_same_methods_and_signatures_as_the_executors_ctx():
    protocol = {n for n in public_methods(typed.Context)}
    assert protocol == {"io", "io_many", "call", "call_many", "log", "blockdb", "rpc", "logical_types", "meta", "run"}
    for impl in (real.SyncContext, real.AsyncContext):
        assert public_methods(impl) == protocol, impl
        for name in protocol:
            assert prop_or_fn(impl, name) == prop_or_fn(typed.Context, name), (impl.__name__, name)


def test_chain_helpers_match():
    for proto, impl in ((typed.BlockDb, chain_api.BlockDb), (typed.Rpc, chain_api.Rpc), (typed.LogicalTypes, chain_api.LogicalTypes), (typed.Meta, chain_api.Meta)):
        assert public_methods(impl) == public_methods(proto), impl
        for name in public_methods(proto):
            assert params(getattr(impl, name)) == params(getattr(proto, name)), (impl.__name__, name)
    # The properties return the helper types.
    hints = typing.get_type_hints(typed.Context.blockdb.fget)
    assert hints["return"] is typed.BlockDb


def test_a_real_ctx_is_a_context_at_runtime():
    class FakeCall:
        id = "c1"
        run = {"task_id": "t", "generation": 2}

    sync = real.SyncContext(FakeCall(), lambda call, reqs: [], chain="ethereum")
    assert isinstance(sync, blockx.Context)
    assert isinstance(sync.blockdb, blockx.BlockDb) and isinstance(sync.rpc, blockx.Rpc) and isinstance(sync.meta, blockx.Meta)
    assert isinstance(sync.logical_types, blockx.LogicalTypes)
    assert isinstance(real.AsyncContext(FakeCall()), blockx.Context)
    assert sync.run == {"task_id": "t", "generation": 2}


def test_py_typed_ships():
    assert os.path.exists(os.path.join(os.path.dirname(blockx.__file__), "py.typed"))
