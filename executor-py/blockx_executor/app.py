"""The executor process: ``python3 -m blockx_executor --socket PATH --id EXECUTOR_ID``.

Start-up order matters: limits and the scratch directory first, then connect and send Hello
(so the pool sees us as early as possible), then the heavier imports, then the audit hook
(after which the process may no longer open connections), then serve.

Environment: BLOCKX_EXECUTOR_TOKEN_ON_STDIN ("1": the token is the first line of stdin, so that it is
never in the environment user code can read back from /proc/self/environ) or BLOCKX_EXECUTOR_TOKEN
(the token itself; removed from os.environ after the Hello), BLOCKX_EXECUTOR_NPROC_LIMIT,
BLOCKX_EXECUTOR_SCRATCH_DIR, BLOCKX_EXECUTOR_PROCESS_FILTER (a seccomp program in hex, from a
sandboxing pool: installed before serving), BLOCKX_EXECUTOR_ALLOW_NETWORK ("1": tests only),
BLOCKX_EXECUTOR_BLOCK_STORE_FD (an inherited read-only fd of the block store: shared_store.py).
"""

import gc
import os
import socket
import sys

from .capture import warn
from .framing import encode_json, frame_bytes

PROTOCOL_VERSION = 1
GC_THRESHOLD_0 = 100_000


def _parse_args(argv):
    import argparse

    parser = argparse.ArgumentParser(prog="python3 -m blockx_executor", description="BlockX Python executor (see PROTOCOL.md)")
    parser.add_argument("--socket", required=True, help="Unix socket path of the executor pool")
    parser.add_argument("--id", required=True, help="executor id, echoed in Hello")
    return parser.parse_args(argv)


def _read_token() -> str:
    """_read_token takes the one-time token the pool gave this executor, leaving no copy behind."""
    token = os.environ.pop("BLOCKX_EXECUTOR_TOKEN", "")
    if os.environ.pop("BLOCKX_EXECUTOR_TOKEN_ON_STDIN", "") == "1":
        token = sys.stdin.readline().strip()
    try:
        # Nothing more comes on stdin; user code gets an empty one.
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
    except OSError:
        pass
    return token


def main(argv=None) -> None:
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    sys.modules[__package__]._serving = True  # this process serves a pool: blockx_executor.serving()
    token = _read_token()
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
    from . import shared_store

    block_store = shared_store.open_inherited()
    if block_store is not None:
        hello["blockStore"] = block_store
    try:
        sock.sendall(frame_bytes(encode_json(hello)))
    except OSError as e:
        warn(f"cannot send Hello to the pool: {e}")
        sys.exit(1)

    del token, hello

    from . import capture
    from .engine import Engine  # resolves its ctypes symbol before the hook denies dlsym

    process_filter = os.environ.pop("BLOCKX_EXECUTOR_PROCESS_FILTER", "")
    if process_filter:
        try:
            isolation.install_process_filter(process_filter)
        except Exception as e:
            warn(f"cannot install the process filter the pool asked for: {e}")
            sys.exit(1)
    try:
        hot_spin_s = int(os.environ.get("BLOCKX_EXECUTOR_HOT_SPIN_US", "0") or "0") / 1e6
    except ValueError:
        hot_spin_s = 0.0
    engine = Engine(sock, args.id, hot_spin_s)
    # A decoded block is thousands of dicts and lists: at Python's default first-generation
    # threshold (700 new containers) each block set off several collections, and a call holding
    # many blocks (a bundle read with ctx.io_many) paid for walking all of them again and again.
    # Cycles are still collected, every GC_THRESHOLD_0 container allocations instead of 700
    # (bench/README.md: a backfill of 25-block bundles, executors' CPU per block 0.368 -> 0.310 ms).
    gc.set_threshold(GC_THRESHOLD_0, 10, 10)
    isolation.install_audit_hook(allow_network=os.environ.get("BLOCKX_EXECUTOR_ALLOW_NETWORK") == "1")
    capture.install()
    engine.run()
