"""blockx.testing.run: one call through the binary's `blockx exec`."""
import pytest

from blockx import BlockxError, CallFailed
from blockx.testing import run

from support import BINARY


def test_run_returns_the_value(tmp_path, monkeypatch):
    monkeypatch.setenv("BLOCKX_BIN", BINARY)
    fn = tmp_path / "inc.py"
    fn.write_text("def main(ctx, input):\n    ctx.log('x')\n    return {'got': input, 'next': input['n'] + 1}\n")
    assert run(str(fn), {"n": 41}) == {"got": {"n": 41, "chain": "ethereum"}, "next": 42}
    assert run(str(fn), {"n": 1, "chain": "base"}, chain="ethereum")["got"]["chain"] == "base"


def test_run_raises_the_users_exception_with_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("BLOCKX_BIN", BINARY)
    fn = tmp_path / "bad.py"
    fn.write_text("def inner(x):\n    raise ValueError(f'bad {x}')\n\ndef main(ctx, input):\n    return inner(input)\n")
    with pytest.raises(CallFailed) as ei:
        run(str(fn), 7)
    assert ei.value.error_code == "USER_ERROR"
    assert ei.value.error_message == "ValueError: bad 7"
    assert "in inner" in ei.value.traceback and "raise ValueError" in ei.value.traceback
    other = tmp_path / "entry.py"
    other.write_text("def go(ctx, x):\n    return x * 3\n")
    assert run(str(other), 2, entry="go") == 6


def test_run_bad_input(tmp_path, monkeypatch):
    monkeypatch.setenv("BLOCKX_BIN", BINARY)
    with pytest.raises(BlockxError, match="is not a file"):
        run(str(tmp_path / "missing.py"), 1)
    fn = tmp_path / "f.py"
    fn.write_text("def main(ctx, x):\n    return x\n")
    with pytest.raises(BlockxError, match="input is not JSON"):
        run(str(fn), {1, 2})


def test_run_reads_the_local_chain_and_refuses_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("BLOCKX_BIN", BINARY)
    fn = tmp_path / "stats.py"
    fn.write_text(
        "def main(ctx, input):\n"
        "    n = input['blockNumber']\n"
        "    b = ctx.blockdb.block(n, full=False)\n"
        "    same = ctx.io('localtestservice', 'eth_getBlockByNumber', {'chain': input['chain'], 'number': n, 'full': False})\n"
        "    return {'number': int(b['number'], 16), 'hash': b['hash'], 'same': same['hash'] == b['hash'], 'head': ctx.blockdb.head()}\n")
    v = run(str(fn), {"blockNumber": 1234}, chain="ethereum", env={"LOCALTESTSERVICE_HEAD": "5000"})
    assert v["number"] == 1234 and v["same"] is True and v["head"] == 5000
    assert v["hash"].startswith("0x") and len(v["hash"]) == 66
    w = tmp_path / "write.py"
    w.write_text("def main(ctx, input):\n    return ctx.io('localtestservice', 'eth_sendRawTransaction', {'chain': 'ethereum', 'tx': '0x00'})\n")
    with pytest.raises(CallFailed) as ei:
        run(str(w), 1)
    assert "PermissionDenied" in ei.value.error_message and "read-only" in ei.value.error_message
