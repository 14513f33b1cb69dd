"""The executor process: ``python3 -m blockx_executor --socket PATH --id EXECUTOR_ID``.

Start-up order matters: limits and the scratch directory first, then connect and send Hello
(so the pool sees us as early as possible), then the heavier imports, then the audit hook
(after which the process may no longer open connections), then serve.

Environment: BLOCKX_EXECUTOR_TOKEN (required, echoed in Hello), BLOCKX_EXECUTOR_NPROC_LIMIT,
BLOCKX_EXECUTOR_SCRATCH_DIR, BLOCKX_EXECUTOR_ALLOW_NETWORK ("1": tests only).
"""

import os
import socket
import sys

from .capture import warn
from .framing import encode_json, frame_bytes

PROTOCOL_VERSION = 1


def _parse_args(argv):
    import argparse

    parser = argparse.ArgumentParser(prog="python3 -m blockx_executor", description="BlockX Python executor (see PROTOCOL.md)")
    parser.add_argument("--socket", required=True, help="Unix socket path of the executor pool")
    parser.add_argument("--id", required=True, help="executor id, echoed in Hello")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    token = os.environ.get("BLOCKX_EXECUTOR_TOKEN", "")
    if not token:
        warn("BLOCKX_EXECUTOR_TOKEN: expected a non-empty token, got nothing")
        sys.exit(2)

    from . import isolation

    nproc = os.environ.get("BLOCKX_EXECUTOR_NPROC_LIMIT", "").strip()
    if nproc:
        isolation.set_nproc_limit(nproc)
    scratch = os.environ.get("BLOCKX_EXECUTOR_SCRATCH_DIR", "").strip()
    if scratch:
        try:
            os.chdir(scratch)
        except OSError as e:
            warn(f"BLOCKX_EXECUTOR_SCRATCH_DIR: cannot change into {scratch!r}: {e}")

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(args.socket)
    except OSError as e:
        warn(f"cannot connect to the pool at {args.socket!r}: {e}")
        sys.exit(1)
    hello = {
        "type": "Hello",
        "protocol": PROTOCOL_VERSION,
        "executorId": args.id,
        "token": token,
        "pid": os.getpid(),
        "python": "%d.%d.%d" % sys.version_info[:3],
    }
    try:
        sock.sendall(frame_bytes(encode_json(hello)))
    except OSError as e:
        warn(f"cannot send Hello to the pool: {e}")
        sys.exit(1)

    from . import capture
    from .engine import Engine  # resolves its ctypes symbol before the hook denies dlsym

    try:
        hot_spin_s = int(os.environ.get("BLOCKX_EXECUTOR_HOT_SPIN_US", "0") or "0") / 1e6
    except ValueError:
        hot_spin_s = 0.0
    engine = Engine(sock, args.id, hot_spin_s)
    isolation.install_audit_hook(allow_network=os.environ.get("BLOCKX_EXECUTOR_ALLOW_NETWORK") == "1")
    capture.install()
    engine.run()
