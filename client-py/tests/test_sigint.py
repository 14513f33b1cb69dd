"""Ctrl-C during run_task(progress=True): the script stops, the task keeps running, and the
message says how to follow or cancel it."""
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

from support import CLIENT_PY, PYTHON

from blockx import Client

SCRIPT = textwrap.dedent('''
    import sys
    from blockx import Client
    SRC = "import time\\ndef main(ctx, x):\\n    time.sleep(0.3)\\n    return x\\n"
    with Client.from_env() as c:
        c.run_task(source=SRC, inputs=list(range(40)), progress="plain")
    print("NOT INTERRUPTED")
''')


def test_sigint_leaves_the_task_running_and_says_how_to_follow_or_cancel(dev):
    env = {**os.environ, **dev.env, "PYTHONPATH": CLIENT_PY}
    p = subprocess.Popen([PYTHON, "-c", SCRIPT], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wait for the first progress line (the task is submitted), then Ctrl-C.
    assert p.stderr is not None
    first = p.stderr.readline()
    assert "calls" in first, first
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode != 0 and "NOT INTERRUPTED" not in out
    assert "KeyboardInterrupt" in err
    m = re.search(r"task (\S+) is still running on Worker (\S+)\.", err)
    assert m, err
    task_id, worker = m.group(1), m.group(2)
    assert f"blockx watch {task_id} --worker {worker}" in err
    assert f"blockx cancel {task_id} --worker {worker}" in err
    # The task was left running: it finishes on its own, all 40 values in order.
    with Client.from_env(dev.env) as c:
        assert c.handle(task_id, worker).result() == list(range(40))
