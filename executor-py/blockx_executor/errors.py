"""Exceptions that user code sees, and the executor's own interrupts.

BackendError and SubCallError are raised by ``ctx`` when the pool answers a request with
``ok: false``; user code may catch them. Interrupt and its subclasses derive from
BaseException so that a user's ``except Exception`` does not swallow them: the executor
raises them asynchronously in a thread whose call went over budget or was cancelled.
"""


class BackendError(Exception):
    """BackendError is a failed IO request: ``type`` is the backend's error type (for example
    ``InvalidParams`` or ``BackendUnavailable``), ``message`` says what went wrong, ``retryable``
    whether the same request may succeed later (the backend was down or overloaded). A
    retryable BackendError that escapes the function fails the call with ``BACKEND_RETRYABLE``,
    which the Worker retries; any other escapes as ``USER_ERROR``."""

    def __init__(self, type: str, message: str, retryable: bool = False) -> None:
        super().__init__(type, message)
        self.type = type
        self.message = message
        self.retryable = retryable

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else str(self.type)


class SubCallError(Exception):
    """SubCallError is a failed sub-call (``ctx.call``): ``code`` is the sub-call's error code
    (``USER_ERROR``, ``BUDGET_EXCEEDED``, ...), ``traceback`` the sub-call's own traceback."""

    def __init__(self, code: str, message: str, traceback: str = "") -> None:
        super().__init__(code, message, traceback)
        self.code = code
        self.message = message
        self.traceback = traceback

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.message else str(self.code)


class Interrupt(BaseException):
    """Interrupt stops a call's user code; the executor owns its delivery."""


class BudgetExceeded(Interrupt):
    """BudgetExceeded stops a call whose CPU time plus IO time went over its budget."""


class Cancelled(Interrupt):
    """Cancelled stops a call the pool cancelled, or one that already has its final answer."""
