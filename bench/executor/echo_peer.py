"""Bare framed ping-pong peer for bench/executor: connects to the Unix socket it is given and
sends every frame (4-byte big-endian length + JSON) straight back, after decoding and
re-encoding the JSON the way an executor must. The baseline of the executor benchmark."""
import json
import socket
import struct
import sys

sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
buf = bytearray()
while True:
    chunk = sock.recv(1 << 16)
    if not chunk:
        break
    buf += chunk
    out = []
    pos = 0
    while len(buf) - pos >= 4:
        (n,) = struct.unpack_from(">I", buf, pos)
        if len(buf) - pos - 4 < n:
            break
        msg = json.loads(buf[pos + 4:pos + 4 + n])
        body = json.dumps(msg, separators=(",", ":")).encode()
        out.append(struct.pack(">I", len(body)) + body)
        pos += 4 + n
    del buf[:pos]
    if out:
        sock.sendall(b"".join(out))
