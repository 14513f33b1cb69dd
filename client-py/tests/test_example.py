"""examples/python-client/run_examples.py, run as a user would after `blockx dev`."""
import os
import re
import subprocess

from support import CLIENT_PY, PYTHON, REPO, rows

SCRIPT = os.path.join(REPO, "examples", "python-client", "run_examples.py")


def test_the_example_script_runs_against_dev(dev, tmp_path):
    env = {**os.environ, **dev.env, "PYTHONPATH": CLIENT_PY}
    p = subprocess.run([PYTHON, SCRIPT, "18000000", "18000200"], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    assert "client: proxy " in out
    assert "precheck block_stats.py: ok=True []" in out
    assert re.search(r"one call: \{'block': 18000000, ", out)
    assert "backfill: SUCCEEDED" in out and "'rows_written': 200" in out
    assert len(re.findall(r"^fanout \d+\.\.\d+: \{.*'blocks': 10,", out, re.M)) == 4
    assert "a failing task raises CallFailed: call 1, input 0, ZeroDivisionError" in out
    assert "return 100 // x" in out
    got = rows(dev.env["TABLE_STORE_PATH"], "block_stats", "block")
    assert [r[0] for r in got] == list(range(18000000, 18000200))
