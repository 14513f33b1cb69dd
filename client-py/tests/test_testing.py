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
