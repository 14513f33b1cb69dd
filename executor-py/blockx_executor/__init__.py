"""blockx_executor runs BlockX user functions for the Worker's executor pool.

Run it as ``python3 -m blockx_executor --socket PATH --id EXECUTOR_ID``; PROTOCOL.md (next to
this package) is the contract with the pool. User code may import the exceptions below.
"""

from .capture import tls
from .errors import BackendError, BudgetExceeded, Cancelled, JsonRpcError, SubCallError

__all__ = ["BackendError", "JsonRpcError", "SubCallError", "BudgetExceeded", "Cancelled", "current_context", "serving"]

# Set by app.main once this process is an executor serving a pool (not when a client or a test
# merely imports the package).
_serving = False


def serving() -> bool:
    """serving: whether this process is an executor serving a pool."""
    return _serving


def current_context():
    """current_context: the ``ctx`` of the call whose step runs on this thread, or None outside a
    call's entry (blockx-py's ``Function.call`` runs as a sub-call through it)."""
    call = getattr(tls, "call", None)
    return None if call is None else call.ctx
