"""The block store the pool shares with this executor: the Worker's open file of final blocks,
inherited read-only at spawn (its fd number in BLOCKX_EXECUTOR_BLOCK_STORE_FD). The executor
reports the file's identity (``st_dev:st_ino``) in its Hello; the pool then answers an IO request
for a final block with ``{"ok": true, "mapped": [offset, length], "store": identity}`` instead of
the block's bytes, and the executor reads those bytes itself (one positioned read from the page
cache) and decodes them once, on the call's own thread.

Anything that cannot be read that way (another file's identity, a short read because the file
was truncated) is asked for again, as bytes (``"bytes": true`` on the request): the Worker then
reads it, or fails the request naming the cause. Bytes that are not JSON (a file rewritten in
place) fail the request at once: the Worker would read the same bytes.

A positioned read rather than mmap: json.loads cannot take a memoryview, so slicing a mapping
copies the bytes just like os.pread does, and a read of a truncated file comes back short where a
touch of a mapping past the end of the file would kill the process with SIGBUS."""

import json
import os
import stat

from .capture import warn

_loads = json.loads
_pread = os.pread

# (fd, identity) of the inherited store, or None.
_store = None


def open_inherited():
    """open_inherited takes the store's fd from the environment and returns its identity for the
    Hello, or None when there is none (or it is not a regular file)."""
    global _store
    raw = os.environ.pop("BLOCKX_EXECUTOR_BLOCK_STORE_FD", "")
    if not raw:
        return None
    try:
        fd = int(raw)
        st = os.fstat(fd)
    except (ValueError, OSError) as e:
        warn(f"BLOCKX_EXECUTOR_BLOCK_STORE_FD={raw!r}: not an open file ({e}); blocks will come as bytes")
        return None
    if not stat.S_ISREG(st.st_mode):
        warn(f"BLOCKX_EXECUTOR_BLOCK_STORE_FD={raw!r}: not a regular file; blocks will come as bytes")
        return None
    identity = f"{st.st_dev}:{st.st_ino}"
    _store = (fd, identity)
    return identity


_UNREAD = object()


def _read(result):
    """_read gives the value of one mapped result, or _UNREAD."""
    store = _store
    if store is None or result.get("store") != store[1]:
        return _UNREAD
    span = result.get("mapped")
    if type(span) is not list or len(span) != 2:
        return _UNREAD
    offset, length = span
    if type(offset) is not int or type(length) is not int or offset < 0 or length <= 0:
        return _UNREAD
    try:
        data = _pread(store[0], length, offset)
    except OSError:
        return _UNREAD
    # Short: the file was truncated after the Worker answered. The Worker's own read will say so.
    if len(data) != length:
        return _UNREAD
    try:
        return _loads(data)
    except ValueError as e:
        # Asking for bytes would not help: the Worker reads the same file.
        return _Corrupt(f"the block store's bytes at [{offset}, {offset + length}) are not JSON ({e}): the store file was changed in place while it was served")


class _Corrupt:
    __slots__ = ("message",)

    def __init__(self, message):
        self.message = message


def read_mapped(results):
    """read_mapped replaces, in place, every mapped result of a ResumeCall by its value read from
    the shared store; returns the indexes of those it could not read (None when there were none)."""
    missing = None
    for i, r in enumerate(results):
        if type(r) is dict and "mapped" in r:
            value = _read(r)
            if value is _UNREAD:
                if missing is None:
                    missing = []
                missing.append(i)
            elif type(value) is _Corrupt:
                results[i] = {"ok": False, "error": {"type": "BlockStoreCorrupt", "message": value.message}}
            else:
                results[i] = {"ok": True, "value": value}
    return missing


def bytes_request(request):
    """bytes_request is the same IO request, asking for the value's bytes instead of a mapping."""
    again = dict(request)
    again["bytes"] = True
    return again
