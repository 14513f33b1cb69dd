"""blockx: the Python client of a BlockX cluster (blockx-py) and the typed ``ctx`` of functions.

    from blockx import Client

    with Client.from_env() as client:            # PROXY_SOCKET_PATH, or BLOCKX_COORDINATOR_ADDRS ...
        run = client.run_task(function="stats.py", blocks=range(0, 1000), table="stats", progress=True)
        values = client.run_task(source=SRC, inputs=[1, 2, 3]).result()
        outcomes = client.run_tasks([task_a, task_b, ...], concurrency=256)   # the batch path

    value = blockx.function("stats.py").call({"chain": "ethereum", "blockNumber": 5})   # here or in a function

See client-py/README.md and docs/functions.md.

The package is importable inside an executor too (the Worker ships it beside the executor), where
only what needs no gRPC is loaded: ``function``, ``Context`` and the errors; the client's names
load on first use (PEP 562), so ``import blockx`` never imports grpc or protobuf by itself.
"""
import importlib
from typing import TYPE_CHECKING, Any

from .context import BlockDb, Context, LogicalTypes, Meta, Rpc
from .errors import BlockxError, CallFailed
from .function import Function, function

if TYPE_CHECKING:
    from .client import Client, DebugResult, Diagnostic, PrecheckResult, RunResult, Snapshot, TaskHandle, TaskOutcome
    from .config import ClientConfig
    from .policy import Progress, cluster_for, resubmit_by_default
    from .tasks import build_task, task_from_dict

#: The names loaded on first use, by module.
_LAZY = {
    **dict.fromkeys(["Client", "DebugResult", "Diagnostic", "PrecheckResult", "RunResult", "Snapshot", "TaskHandle", "TaskOutcome"], "client"),
    "ClientConfig": "config",
    **dict.fromkeys(["Progress", "cluster_for", "resubmit_by_default"], "policy"),
    **dict.fromkeys(["build_task", "task_from_dict"], "tasks"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'blockx' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"
__all__ = ["Client", "ClientConfig", "RunResult", "TaskOutcome", "TaskHandle", "Snapshot", "DebugResult", "PrecheckResult", "Diagnostic",
           "BlockxError", "CallFailed", "Context", "BlockDb", "Rpc", "LogicalTypes", "Meta", "Progress", "build_task", "task_from_dict",
           "cluster_for", "resubmit_by_default", "function", "Function"]
