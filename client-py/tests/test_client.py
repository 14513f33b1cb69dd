"""blockx-py against a real `blockx dev` (Coordinators, Workers, Sync Invoker, proxy), through
the proxy and direct: each test runs in both modes."""
import io
import json

import pytest

from support import rows

from blockx import BlockxError, CallFailed, Client

STATS = '''def main(ctx, input):
    n = input["blockNumber"]
    b = ctx.blockdb.block(n, full=False)
    return [{"block": n, "txs": len(b["transactions"]), "hash": b["hash"]}]
'''
DOUBLE = "def main(ctx, x):\n    return x * 2\n"
BUNDLE = '''def main(ctx, input):
    out = []
    for n in range(input["fromBlock"], input["toBlock"] + 1):
        out.append({"block": n, "bundle_from": input["fromBlock"]})
    return out
'''
FAILING = '''def helper(x):
    return 10 // x

def main(ctx, x):
    return helper(x)
'''


def test_block_table_backfill_with_progress(client, dev, mode, capsys):
    table = f"py_backfill_{mode}"
    seen = []
    run = client.run_task(source=STATS, blocks=range(1000, 1200), chain="ethereum", table=table, progress="plain",
                          on_progress=lambda p, s: seen.append((p.done, p.total, s.state)))
    assert run.state == "SUCCEEDED" and run.succeeded
    assert run.cluster == "block"
    assert run.writes == [{"table": table, "handler": "block_table_write", "rows_written": 200, "calls_written": 200}]
    got = rows(dev.env["TABLE_STORE_PATH"], table, "block")
    assert [r[0] for r in got] == list(range(1000, 1200))
    # Progress: totals known, counts never go back, the last one is complete.
    assert seen[-1] == (200, 200, "SUCCEEDED")
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))
    err = capsys.readouterr().err
    assert "200/200 calls" in err and "SUCCEEDED" in err


def test_progress_uses_tqdm_when_installed(client, mode, capsys):
    import tqdm  # noqa: F401  - fails the test if the package is missing
    run = client.run_task(source=DOUBLE, inputs=list(range(20)), progress=True)
    assert run.result() == [x * 2 for x in range(20)]
    err = capsys.readouterr().err
    assert "20/20" in err and "call" in err


def test_bundle_task(client, dev, mode):
    table = f"py_bundles_{mode}"
    run = client.run_task(source=BUNDLE, blocks=range(0, 95), bundle_size=10, table=table)
    assert run.cluster == "bundle"
    assert run.state == "SUCCEEDED"
    assert run.snapshot.calls_total == 10
    got = rows(dev.env["TABLE_STORE_PATH"], table, "block")
    assert [r[0] for r in got] == list(range(0, 95))
    assert {r[1] for r in got} == set(range(0, 95, 10))


def test_return_values_over_inputs_in_input_order(client, mode):
    # null is a call like any other (it once read as the end of the task's calls).
    inputs = [5, {"a": 1}, "x", [1, 2], None, 2 ** 40, True]
    run = client.run_task(source="def main(ctx, x):\n    return [x, type(x).__name__]\n", inputs=inputs)
    assert run.cluster == "block"  # anything returning values goes to the block cluster
    assert run.snapshot.calls_succeeded == len(inputs)
    assert run.result() == [[x, type(x).__name__] for x in inputs]
    assert client.run_task(source="def main(ctx, x):\n    return None\n", inputs=[None]).result() == [None]


def test_a_short_task_is_answered_by_its_submit(client, mode):
    # run_task's SubmitTask waits for the task's end (wait_ms): the result comes with its answer.
    events = []
    run = client.run_task(source=DOUBLE, inputs=[21], on_event=events.append)
    assert run.result() == [42]
    submitted = [e for e in events if e["kind"] != "reserveRefused"]
    assert [e["kind"] for e in submitted] == ["submitting", "submitted"] and submitted[1]["state"] == "SUCCEEDED"
    # Following progress keeps the watch: SubmitTask answers at once.
    events.clear()
    assert client.run_task(source=DOUBLE, inputs=[1], on_event=events.append, on_progress=lambda p, s: None).result() == [2]
    assert next(e for e in events if e["kind"] == "submitted")["state"] != "SUCCEEDED"


def test_values_larger_than_a_submit_answer_takes_come_from_the_watch(client, mode):
    # The waiting SubmitTask answers without outputs over 1 MiB (grpcio's default bound is 4 MiB):
    # run_task reads them from the watch, and the task was submitted once.
    events = []
    run = client.run_task(source="def main(ctx, n):\n    return 'x' * n\n", inputs=[2_600_000, 2_600_000], on_event=events.append)
    assert [len(v) for v in run.result()] == [2_600_000, 2_600_000]
    assert run.attempts == 1 and [e["kind"] for e in events if e["kind"] != "reserveRefused"] == ["submitting", "submitted"]


def test_task_dict_like_a_task_file(client, mode):
    task = {"functionCallConfig": {"function": {"source": DOUBLE, "entry": "main"}, "inputs": {"inputs": [1, 2, 3]}},
            "outputs": [{"returnValue": {}}]}
    assert client.run_task(task).result() == [2, 4, 6]


def test_failing_call_raised_with_input_and_user_traceback(client, mode):
    run = client.run_task(source=FAILING, inputs=[1, 0, 5])
    assert run.state == "FAILED" and not run.succeeded
    with pytest.raises(CallFailed) as ei:
        run.result()
    e = ei.value
    assert e.code == "CALL_FAILED" and e.error_code == "USER_ERROR"
    assert e.call_index == 1 and e.call_input == "0"
    assert e.error_message.startswith("ZeroDivisionError")
    assert "in helper" in e.traceback and "return 10 // x" in e.traceback and "in main" in e.traceback
    assert "call 1 with input 0 failed with USER_ERROR" in str(e) and "return 10 // x" in str(e)


def test_a_function_file_is_named_in_its_traceback(client, mode, tmp_path):
    path = tmp_path / "failing_fn.py"
    path.write_text(FAILING)
    with pytest.raises(CallFailed) as ei:
        client.run_task(function=str(path), inputs=[0]).result()
    assert 'File "failing_fn.py"' in ei.value.traceback and "return 10 // x" in ei.value.traceback


def test_submit_watch_result_cancel(client, mode):
    h = client.submit(source="import time\ndef main(ctx, x):\n    time.sleep(0.2)\n    return x\n", inputs=list(range(6)))
    snaps = list(h.watch())
    assert snaps[-1].terminal and snaps[-1].state == "SUCCEEDED"
    assert all(not s.terminal for s in snaps[:-1])
    assert h.result() == list(range(6))
    assert client.result(h.task_id, h.worker_addr).values == list(range(6))
    slow = client.submit(source="import time\ndef main(ctx, x):\n    time.sleep(5)\n    return x\n", inputs=list(range(50)))
    snap = slow.cancel("test cancels")
    run = slow.wait()
    assert run.state == "CANCELLED"
    assert snap.state in ("CANCELLED", "RUNNING")


def test_invoke_debug_invoke_precheck(client, mode, tmp_path):
    fn = tmp_path / "add.py"
    fn.write_text("def main(ctx, a):\n    print('adding', a)\n    ctx.log('head read')\n    h = ctx.blockdb.head('ethereum')\n    return {'sum': a['x'] + a['y'], 'head': h}\n")
    v = client.invoke(str(fn), {"x": 1, "y": 2})
    assert v["sum"] == 3 and v["head"] > 0
    d = client.debug_invoke(str(fn), {"x": 2, "y": 3})
    assert d.value["sum"] == 5 and d.error is None
    assert "adding" in d.stdout
    assert [l["message"] for l in d.logs] == ["head read"]
    assert [(x["backend"], x["op"]) for x in d.io_trace] == [("blockdb", "head")]
    with pytest.raises(CallFailed) as ei:
        client.invoke(source=FAILING, args=0)
    assert ei.value.error_code == "USER_ERROR" and "return 10 // x" in ei.value.traceback
    dbg = client.debug_invoke(source=FAILING, args=0)
    assert dbg.error is not None and "in helper" in dbg.traceback
    ok = client.precheck(str(fn))
    assert ok.ok and ok.diagnostics == [] and ok.entry == "main"
    bad = client.precheck(source="def main(ctx, x):\n    return (\n")
    assert not bad.ok and bad.diagnostics[0].code == "SYNTAX_ERROR" and bad.diagnostics[0].line >= 2
    sig = client.precheck(source="def main(ctx):\n    return 1\n")
    assert not sig.ok and [d.code for d in sig.diagnostics] == ["BAD_SIGNATURE"]


def test_bad_input_gets_clear_errors(client, mode):
    cases = [
        (dict(source=DOUBLE), "give exactly one of blocks="),
        (dict(inputs=[1]), "give exactly one of function="),
        (dict(source=DOUBLE, blocks=range(0, 10, 2)), "step 1"),
        (dict(source=DOUBLE, blocks=range(5, 5)), "empty"),
        (dict(source=DOUBLE, inputs=[]), "inputs= is empty"),
        (dict(source=DOUBLE, inputs={"a": 1}), "list of JSON values"),
        (dict(source=DOUBLE, inputs=[{1, 2}]), "inputs[0] is not JSON"),
        (dict(function="/nonexistent/fn.py", inputs=[1]), "cannot read the file"),
        (dict(source=DOUBLE, inputs=[1], bundle_size=3), "bundle_size= goes with blocks="),
        (dict(source=DOUBLE, blocks=range(0, 9), table="bad name"), "table name"),
        (dict(source=DOUBLE, inputs=[1], timeout_ms=-1), "timeout_ms="),
        (dict(source=DOUBLE, inputs=[1], colour="red"), "colour"),
    ]
    for kwargs, text in cases:
        with pytest.raises(BlockxError) as ei:
            client.run_task(**kwargs)
        assert ei.value.code == "INVALID_ARGUMENT", kwargs
        assert text in str(ei.value), (kwargs, str(ei.value))
    with pytest.raises(BlockxError, match="not a worker.v1.Task"):
        client.run_task({"functionCallConfig": {"nope": 1}})
    with pytest.raises(BlockxError, match="function name"):
        client.invoke("no such thing!", 1)


def test_unknown_function_name_is_not_found(client, mode):
    with pytest.raises(BlockxError) as ei:
        client.invoke("no_such_function", 1)
    assert ei.value.code == "NOT_FOUND"


def test_from_env_rejects_bad_variables():
    with pytest.raises(BlockxError, match=r"BLOCKX_COORDINATOR_ADDRS: expected a comma-separated host:port list, got 'nohost'"):
        Client.from_env({"BLOCKX_COORDINATOR_ADDRS": "nohost"})
    with pytest.raises(BlockxError, match=r"BLOCKX_MAX_ATTEMPTS: expected an integer from 1 to 100, got 'abc'"):
        Client.from_env({"BLOCKX_MAX_ATTEMPTS": "abc"})
    c = Client.from_env({"PROXY_SOCKET_PATH": "/run/x.sock", "BLOCKX_COORDINATOR_ADDRS": "a:1,b:2"})  # no transport: the proxy's socket needs none
    assert c.via_proxy and c.config.coordinator_addrs == ("a:1", "b:2")
    assert not Client.from_env({"PROXY_SOCKET_PATH": "/run/x.sock"}, direct=True).via_proxy



SLOW = "import time\ndef main(ctx, x):\n    time.sleep(2.5)\n    return x\n"


def test_a_wall_clock_stepped_ahead_mid_run_changes_no_interval(client, mode, monkeypatch):
    """Issue 51, item 7: the client measured its intervals and deadlines with time.time(), so a wall
    clock stepped an hour ahead mid-run (NTP, a laptop waking) counted that hour into the progress
    rate (two calls in 3,600 s) and into its deadline. Two calls of 2.5 s on two executors: the rate
    seen at their end is about 0.8 calls a second, and the run ends SUCCEEDED on its first attempt."""
    import time as time_module
    real = time_module.time
    seen = []

    def step(p, s):
        if not seen:
            monkeypatch.setattr(time_module, "time", lambda: real() + 3600)
        seen.append(p)

    run = client.run_task(source=SLOW, inputs=[1, 2], timeout=120, on_progress=step)
    assert run.state == "SUCCEEDED" and run.attempts == 1
    assert run.result() == [1, 2]
    assert seen[-1].done == 2
    assert 0.1 < seen[-1].rate_per_s < 10, seen[-1]
