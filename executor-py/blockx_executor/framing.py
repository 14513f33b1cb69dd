"""Frames of the executor protocol: a 4-byte big-endian length, then that many bytes of UTF-8
JSON. FrameReader is Sans-IO: the caller receives bytes into ``space()``, reports them with
``advance(n)`` and takes whole frames with ``next_frame()``."""

import json
import struct

MAX_FRAME_BYTES = 64 << 20
_INITIAL_BUFFER = 1 << 18
_MIN_READ = 1 << 16

_header = struct.Struct(">I")
_pack_header = _header.pack
_unpack_header = _header.unpack_from

# One shared encoder: json.dumps with keyword arguments builds a new encoder on every call.
encode_json = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


class ProtocolError(Exception):
    """ProtocolError: the peer sent something that breaks the framing."""


def frame_bytes(body: str) -> bytes:
    """frame_bytes turns one JSON text into a frame ready for sendall."""
    data = body.encode("utf-8", "surrogatepass")
    return _pack_header(len(data)) + data


class FrameReader:
    """FrameReader cuts a byte stream into frames with as little copying as it can: one
    buffer, filled by recv_into, compacted only when a frame would not fit."""

    __slots__ = ("_buf", "_start", "_end", "_want", "_max", "_last")

    def __init__(self, max_frame: int = MAX_FRAME_BYTES) -> None:
        self._buf = bytearray(_INITIAL_BUFFER)
        self._start = 0
        self._end = 0
        self._want = 0
        self._max = max_frame
        self._last = 0

    def next_frame(self):
        """next_frame returns the next frame's payload (a bytearray), or None until more
        bytes arrive. Raises ProtocolError for a frame over the size limit."""
        start = self._start
        avail = self._end - start
        if avail < 4:
            self._want = 4 - avail
            return None
        n = _unpack_header(self._buf, start)[0]
        if n > self._max:
            raise ProtocolError(f"frame of {n} bytes is over the limit of {self._max} bytes")
        if avail < 4 + n:
            self._want = 4 + n - avail
            return None
        s = start + 4
        self._last = start
        self._start = s + n
        return self._buf[s : s + n]

    def unread(self) -> None:
        """unread puts back the frame next_frame just returned: the next call returns it again.
        Only right after that next_frame (``space()`` may move the buffer's bytes)."""
        self._start = self._last

    def space(self) -> memoryview:
        """space returns a writable view of the free tail of the buffer, large enough for the
        frame being read. Release it (drop the reference) before calling any other method."""
        start, end = self._start, self._end
        if start == end:
            start = end = self._start = self._end = 0
            if len(self._buf) > _INITIAL_BUFFER * 4:
                self._buf = bytearray(_INITIAL_BUFFER)
        want = max(self._want, _MIN_READ)
        buf = self._buf
        if len(buf) - end < want:
            used = end - start
            if used + want > len(buf):
                grown = bytearray(max(len(buf) * 2, used + want))
                grown[:used] = buf[start:end]
                self._buf = buf = grown
            else:
                buf[:used] = buf[start:end]
            self._start, self._end = 0, used
            end = used
        return memoryview(buf)[end:]

    def advance(self, n: int) -> None:
        """advance records that n bytes were written into the last ``space()``."""
        self._end += n
