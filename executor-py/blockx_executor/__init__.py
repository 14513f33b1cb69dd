"""blockx_executor runs BlockX user functions for the Worker's executor pool.

Run it as ``python3 -m blockx_executor --socket PATH --id EXECUTOR_ID``; PROTOCOL.md (next to
this package) is the contract with the pool. User code may import the exceptions below.
"""

from .errors import BackendError, BudgetExceeded, Cancelled, JsonRpcError, SubCallError

__all__ = ["BackendError", "JsonRpcError", "SubCallError", "BudgetExceeded", "Cancelled"]
