"""BlockxError: the one error type of blockx-py, with the TypeScript SDK's codes."""
from __future__ import annotations

from typing import Optional

#: Why the client gave up, in terms a caller can act on (the same codes as the TypeScript SDK):
#: INVALID_ARGUMENT (fix the request), UNREACHABLE (no Coordinator or Worker answered before the
#: deadline), NO_CAPACITY (the cluster stayed full until the deadline), DEADLINE_EXCEEDED (the
#: task was still running at the caller's deadline), WORKER_LOST (the Worker running the task went
#: away and the task could not be resubmitted), NOT_FOUND, UNSUPPORTED, RPC_FAILED (any other
#: gRPC failure, status in ``grpc_code``), CALL_FAILED (a function call failed: see CallFailed).
CODES = frozenset({"INVALID_ARGUMENT", "UNREACHABLE", "NO_CAPACITY", "DEADLINE_EXCEEDED", "WORKER_LOST",
                   "NOT_FOUND", "UNSUPPORTED", "RPC_FAILED", "CALL_FAILED"})


class BlockxError(Exception):
    """BlockxError: a failure of the client or the cluster; ``str(e)`` starts with the code."""

    def __init__(self, code: str, message: str, grpc_code: Optional[str] = None) -> None:
        assert code in CODES, code
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        #: The gRPC status name behind the failure (e.g. "UNAVAILABLE"), when there was one.
        self.grpc_code = grpc_code


class CallFailed(BlockxError):
    """CallFailed: the user's function failed (the first failing call of a task, or an invoke).

    ``error_code`` is the call's code (``USER_ERROR``, ``BUDGET_EXCEEDED``, ``SYNTAX_ERROR``, ...),
    ``error_message`` Python's last traceback line (``ZeroDivisionError: division by zero``),
    ``traceback`` the user's frames, ``call_input`` the input of the failing call (JSON text, or
    None), ``call_index`` its position among the task's calls, ``task_id`` and ``state`` the task's.
    """

    def __init__(self, error_code: str, error_message: str, traceback: str = "", *, call_input: Optional[str] = None,
                 call_index: Optional[int] = None, call_id: str = "", task_id: str = "", state: str = "") -> None:
        where = f"task {task_id} {state}: " if task_id else ""
        which = f"call {call_index}" if call_index is not None else "call"
        inp = f" with input {call_input}" if call_input else ""
        text = f"{where}{which}{inp} failed with {error_code}: {error_message}"
        if traceback:
            text += "\n" + traceback.rstrip("\n")
        super().__init__("CALL_FAILED", text)
        self.error_code = error_code
        self.error_message = error_message
        self.traceback = traceback
        self.call_input = call_input
        self.call_index = call_index
        self.call_id = call_id
        self.task_id = task_id
        self.state = state
