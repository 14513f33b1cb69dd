"""Errors of user code as the pool sees them (CallError): the message, a traceback that shows
only the user's own frames (the executor's frames are noise to the user), and the line and
column of the innermost user frame."""

import traceback as _tb

USER_FILENAME_PREFIX = "<blockx:"


def user_filename(entry: str, digest: str, name: str = "") -> str:
    """user_filename names compiled user code: linecache and the frame filter key on it. With
    the name of the file the source came from (``fn.py``), tracebacks show that name (see
    display_filename)."""
    return f"<blockx:{name or entry}@{digest[:12]}>"


def display_filename(filename: str) -> str:
    """display_filename is what a user reads for a compiled unit: ``fn.py`` for
    ``<blockx:fn.py@71bec89d7b04>``; a unit without a file name keeps its ``<blockx:...>`` name."""
    if filename.startswith(USER_FILENAME_PREFIX) and filename.endswith(">") and "@" in filename:
        label = filename[len(USER_FILENAME_PREFIX):filename.rindex("@")]
        if label.endswith(".py"):
            return label
    return filename


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return f"<unprintable {type(exc).__name__} object>"


def exception_message(exc: BaseException) -> str:
    """exception_message reads like the last line of a Python traceback:
    ``ValueError: bad input`` (just ``ValueError`` when the exception has no text)."""
    text = _safe_str(exc)
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


def _keep_user_frames(te, seen: set) -> None:
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    kept = [f for f in te.stack if f.filename.startswith(USER_FILENAME_PREFIX)]
    for f in kept:
        _ = f.line  # read from linecache under the compiled name before it is renamed
        f.filename = display_filename(f.filename)
    te.stack = _tb.StackSummary.from_list(kept)
    _keep_user_frames(te.__cause__, seen)
    _keep_user_frames(te.__context__, seen)
    for sub in getattr(te, "exceptions", None) or ():
        _keep_user_frames(sub, seen)


def describe_user_exception(exc: BaseException) -> dict:
    """describe_user_exception turns an exception raised by user code into a USER_ERROR
    CallError. Chained exceptions are kept, each with only its user frames."""
    line = column = 0
    try:
        te = _tb.TracebackException(type(exc), exc, exc.__traceback__)
        _keep_user_frames(te, set())
        if te.stack:
            innermost = te.stack[-1]
            line = innermost.lineno or 0
            colno = getattr(innermost, "colno", None)
            column = colno + 1 if colno is not None else 0
        text = "".join(te.format())
    except Exception as e:  # a broken __str__ or a traceback we cannot walk
        text = f"{exception_message(exc)}\n(traceback unavailable: {type(e).__name__})\n"
    return {"code": "USER_ERROR", "message": exception_message(exc), "traceback": text, "line": line, "column": column}


def describe_compile_error(exc: BaseException) -> dict:
    """describe_compile_error turns what compile() raised into a SYNTAX_ERROR CallError:
    ``invalid syntax (line 3, column 7)``, with Python's caret display as the traceback."""
    if isinstance(exc, SyntaxError):
        line = exc.lineno or 0
        column = exc.offset or 0
        message = f"{exc.msg} (line {line}, column {column})"
        if isinstance(exc.filename, str):
            exc.filename = display_filename(exc.filename)
        try:
            text = "".join(_tb.format_exception_only(type(exc), exc))
        except Exception:
            text = ""
        return {"code": "SYNTAX_ERROR", "message": message, "traceback": text, "line": line, "column": column}
    # ValueError for a NUL byte (3.11), RecursionError/MemoryError for absurd nesting.
    return {"code": "SYNTAX_ERROR", "message": exception_message(exc), "traceback": "", "line": 0, "column": 0}
