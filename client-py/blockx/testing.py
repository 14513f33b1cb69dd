"""blockx.testing: run a user function in pytest through the ``blockx`` binary's local executor.

    from blockx.testing import run

    def test_block_stats():
        rows = run("block_stats.py", {"chain": "ethereum", "blockNumber": 5})
        assert rows[0]["block"] == 5

``run`` executes one call with ``blockx exec``: a real executor pool on this machine, with
read-only IO over the local test chain (or the chains of ``CHAINS_CONFIG`` in ``env`` or the
environment), and returns the value, or raises CallFailed with the user's traceback. ``chain``
is put into a dict input that has none. The binary is ``BLOCKX_BIN``, else ``blockx`` on PATH.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any, Mapping, Optional

from .errors import BlockxError, CallFailed

_MISSING = object()


def find_binary() -> str:
    b = os.environ.get("BLOCKX_BIN") or shutil.which("blockx")
    if not b or not os.access(b, os.X_OK):
        raise BlockxError("INVALID_ARGUMENT", "no blockx binary: set BLOCKX_BIN to dist/blockx or put blockx on PATH")
    return b


def run(fn_file: str, input: Any = None, chain: str = "ethereum", *, entry: str = "main", binary: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None, timeout: float = 120) -> Any:
    """run: one call of ``entry(ctx, input)`` from ``fn_file``. A dict input without ``chain``
    gets ``chain``. Returns the value; raises CallFailed (``error_code``, ``traceback``)."""
    if not os.path.isfile(fn_file):
        raise BlockxError("INVALID_ARGUMENT", f"{fn_file!r} is not a file")
    if isinstance(input, dict) and "chain" not in input:
        input = {**input, "chain": chain}
    try:
        payload = json.dumps(input, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise BlockxError("INVALID_ARGUMENT", f"input is not JSON: {e}") from None
    cmd = [binary or find_binary(), "exec", fn_file, payload, "--entry", entry]
    # Only the outcome on stdout (the JSON object `blockx exec` prints), no log lines.
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, "BLOCKX_LOG_LEVEL": "fatal", **(env or {})})
    try:
        out = json.loads(p.stdout)
    except ValueError:
        raise BlockxError("RPC_FAILED", f"blockx exec exited {p.returncode}: {p.stderr.strip() or p.stdout.strip()}") from None
    return _outcome(out, payload)


def _outcome(out: Mapping[str, Any], payload: str) -> Any:
    if out.get("ok") is True:
        return out.get("value")
    err = out.get("error") or {}
    raise CallFailed(err.get("code", "UNKNOWN"), err.get("message", ""), err.get("traceback", ""), call_input=payload)
