"""blockx: the Python client of a BlockX cluster (blockx-py) and the typed ``ctx`` of functions.

    from blockx import Client

    with Client.from_env() as client:            # PROXY_SOCKET_PATH, or BLOCKX_COORDINATOR_ADDRS ...
        run = client.run_task(function="stats.py", blocks=range(0, 1000), table="stats", progress=True)
        values = client.run_task(source=SRC, inputs=[1, 2, 3]).result()
        outcomes = client.run_tasks([task_a, task_b, ...], concurrency=256)   # the batch path

See client-py/README.md and docs/functions.md.
"""
from .client import Client, DebugResult, Diagnostic, PrecheckResult, RunResult, Snapshot, TaskHandle, TaskOutcome
from .config import ClientConfig
from .context import BlockDb, Context, LogicalTypes, Meta, Rpc
from .errors import BlockxError, CallFailed
from .policy import Progress, cluster_for, resubmit_by_default
from .tasks import build_task, task_from_dict

__version__ = "0.1.0"
__all__ = ["Client", "ClientConfig", "RunResult", "TaskOutcome", "TaskHandle", "Snapshot", "DebugResult", "PrecheckResult", "Diagnostic",
           "BlockxError", "CallFailed", "Context", "BlockDb", "Rpc", "LogicalTypes", "Meta", "Progress", "build_task", "task_from_dict",
           "cluster_for", "resubmit_by_default"]
