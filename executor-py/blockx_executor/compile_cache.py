"""The compile cache: user source compiled and its module body run once per digest, kept in
an LRU of CAPACITY units. A cache hit skips both compile and exec."""

import builtins
import inspect
import linecache
import threading
from collections import OrderedDict

CAPACITY = 256
USER_MODULE_NAME = "blockx_user"
# The pool sends a source once per executor, then only its digest (PROTOCOL.md): the executor
# keeps the sources it was sent, bounded by count and by characters. A digest evicted here is
# answered SOURCE_NOT_CACHED and the pool sends the source again, so the bound never fails a call.
SOURCE_STORE_CAPACITY = 256
SOURCE_STORE_MAX_CHARS = 128 << 20


class CompiledUnit:
    """CompiledUnit is one digest's source after compile and exec: the module namespace the
    entries live in, or the compile error (a SYNTAX_ERROR CallError) of a source that does
    not compile, which is cached too. ``entries`` caches each entry's resolution."""

    __slots__ = ("source", "filename", "namespace", "error", "entries")

    def __init__(self, source: str, filename: str, namespace=None, error=None) -> None:
        self.source = source
        self.filename = filename
        self.namespace = namespace
        self.error = error
        self.entries = {}


def register_source(filename: str, source: str) -> None:
    """register_source lets tracebacks and inspect show the user's source lines. An mtime of
    None tells linecache.checkcache to leave the entry alone."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


def forget_source(filename: str) -> None:
    linecache.cache.pop(filename, None)


class CompileCache:
    """CompileCache maps a source digest to its CompiledUnit. ``get`` checks that the cached
    source is the one asked for (a cheap string comparison), so a wrong digest from the pool
    can never run stale code. Safe to use from several threads."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._units = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def get(self, digest: str, source: str):
        with self._lock:
            unit = self._units.get(digest)
            if unit is None or unit.source != source:
                return None
            self._units.move_to_end(digest)
            return unit

    def put(self, digest: str, unit: CompiledUnit) -> None:
        evicted = []
        with self._lock:
            old = self._units.pop(digest, None)
            if old is not None and old.filename != unit.filename:
                evicted.append(old)
            self._units[digest] = unit
            while len(self._units) > self._capacity:
                evicted.append(self._units.popitem(last=False)[1])
            live = {u.filename for u in self._units.values()} if evicted else ()
        for old in evicted:
            if old.filename not in live:
                forget_source(old.filename)

    def __len__(self) -> int:
        return len(self._units)


class SourceStore:
    """SourceStore maps a digest to the source the pool sent with it, least recently used out
    first, at most ``capacity`` sources and ``max_chars`` characters (the newest one is always
    kept, whatever its size: the pool bounds a source's size)."""

    def __init__(self, capacity: int = SOURCE_STORE_CAPACITY, max_chars: int = SOURCE_STORE_MAX_CHARS) -> None:
        self._sources = OrderedDict()
        self._chars = 0
        self._capacity = capacity
        self._max_chars = max_chars
        self._lock = threading.Lock()

    def get(self, digest: str):
        with self._lock:
            source = self._sources.get(digest)
            if source is not None:
                self._sources.move_to_end(digest)
            return source

    def put(self, digest: str, source: str) -> None:
        with self._lock:
            old = self._sources.pop(digest, None)
            if old is not None:
                self._chars -= len(old)
            self._sources[digest] = source
            self._chars += len(source)
            while len(self._sources) > 1 and (len(self._sources) > self._capacity or self._chars > self._max_chars):
                self._chars -= len(self._sources.popitem(last=False)[1])

    def __len__(self) -> int:
        return len(self._sources)


def new_module_namespace() -> dict:
    return {"__name__": USER_MODULE_NAME, "__builtins__": builtins}


def resolve_entry(unit: CompiledUnit, entry: str):
    """resolve_entry returns ``(function, is_async)`` for an entry of a compiled unit, or an
    ENTRY_NOT_FOUND / BAD_SIGNATURE CallError. The entry must accept ``(ctx, input)``."""
    missing = object()
    fn = unit.namespace.get(entry, missing)
    if fn is missing:
        return _error("ENTRY_NOT_FOUND", f"the source defines no entry {entry!r}")
    if not callable(fn):
        return _error("BAD_SIGNATURE", f"entry {entry!r} is not a function (it is {type(fn).__name__}); define def {entry}(ctx, input)")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None  # a builtin without a signature: let the call itself tell
    if signature is not None:
        try:
            signature.bind(None, None)
        except TypeError:
            return _error("BAD_SIGNATURE", f"entry {entry!r} must take two positional arguments (ctx, input), but its signature is {entry}{signature}")
    is_async = inspect.iscoroutinefunction(fn) or (
        not inspect.isfunction(fn) and not inspect.isclass(fn) and inspect.iscoroutinefunction(getattr(fn, "__call__", None))
    )
    return (fn, is_async)


def _error(code: str, message: str) -> dict:
    return {"code": code, "message": message, "traceback": "", "line": 0, "column": 0}
