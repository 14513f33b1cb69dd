"""Output capture: sys.stdout and sys.stderr become CallStream proxies that write into the
buffer of the call whose step is running on the current thread (``tls.call``). Outside any
call (the executor itself, threads user code started) they write to the real stderr, which
the pool logs; the executor never writes to its stdout."""

import io
import sys
import threading

# tls.call: the Call whose step runs on this thread, or None.
# tls.worker: the engine's per-thread state, for threads the engine runs.
tls = threading.local()

_real_stderr = sys.__stderr__


def warn(message: str) -> None:
    """warn writes one human-readable line to the real stderr (the pool logs it)."""
    stream = _real_stderr
    if stream is None:
        return
    try:
        stream.write(f"blockx-executor: {message}\n")
        stream.flush()
    except Exception:
        pass


class _BinaryStream(io.RawIOBase):
    """``sys.stdout.buffer``: bytes decoded as UTF-8 into the text stream."""

    def __init__(self, text: "CallStream") -> None:
        super().__init__()
        self._text = text

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        data = bytes(b)
        self._text.write(data.decode("utf-8", "replace"))
        return len(data)


class CallStream(io.TextIOBase):
    """CallStream is a text stream that writes into the current call's output."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name
        self._is_stderr = name == "<stderr>"
        self.buffer = _BinaryStream(self)

    @property
    def name(self) -> str:
        return self._name

    @property
    def encoding(self) -> str:
        return "utf-8"

    @property
    def errors(self) -> str:
        return "strict"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, s) -> int:
        if type(s) is not str:
            if not isinstance(s, str):
                raise TypeError(f"write() argument must be str, not {type(s).__name__}")
            s = str.__str__(s)
        call = getattr(tls, "call", None)
        if call is None:
            stream = _real_stderr
            if stream is not None:
                stream.write(s)
            return len(s)
        call.write_output(s, self._is_stderr)
        return len(s)

    def flush(self) -> None:
        if getattr(tls, "call", None) is None and _real_stderr is not None:
            _real_stderr.flush()

    def close(self) -> None:
        """close does nothing: one call must not close the stream for every other call."""


def install() -> None:
    """install replaces sys.stdout and sys.stderr with call-aware proxies."""
    sys.stdout = CallStream("<stdout>")
    sys.stderr = CallStream("<stderr>")
