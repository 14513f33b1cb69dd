"""Bare framed ping-pong peer for bench/executor: connects to the Unix socket it is given and
sends every frame (4-byte big-endian length + payload) straight back, untouched. The floor of
the executor benchmark: framing and socket IO, no JSON, no call machinery."""
import socket
import sys

sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
buf = bytearray(1 << 20)
view = memoryview(buf)
have = 0
while True:
    n = sock.recv_into(view[have:])
    if n == 0:
        break
    have += n
    pos = 0
    while have - pos >= 4:
        length = int.from_bytes(buf[pos:pos + 4], "big")
        if have - pos - 4 < length:
            break
        pos += 4 + length
    if pos:
        sock.sendall(view[:pos])
        buf[:have - pos] = buf[pos:have]
        have -= pos
