"""blockx.function against `blockx dev`: the same Function called from this client (through the
Sync Invoker) and from inside executors (as sub-calls: in a call the Sync Invoker runs, and in a
task's call on a Worker) gives the same values and the same errors, and bad input is refused
with INVALID_ARGUMENT before anything is sent."""
import os
import time
import uuid

import pytest

import blockx
from blockx import BlockxError, CallFailed

# What each side does with a Function, as text: this test runs it here, and the function below
# runs the same text inside an executor, so both sides are measured by one ruler.
PROBE = '''
import blockx
from blockx import BlockxError, CallFailed

def outcome(thunk):
    try:
        return {"value": thunk()}
    except CallFailed as e:
        return {"CallFailed": [e.error_code, e.error_message, "ZeroDivisionError" in e.traceback, e.call_input]}
    except BlockxError as e:
        return {"BlockxError": e.code}

def probe(names, make=blockx.function):
    double, fails, missing = (make(n) for n in names)
    return {
        "call": outcome(lambda: double.call(21)),
        "call_many": outcome(lambda: double.call_many([1, 2, 3])),
        "empty": outcome(lambda: double.call_many([])),
        "user_error": outcome(lambda: fails.call(5)),
        "user_error_many": outcome(lambda: fails.call_many([1, 2])),
        "not_found": outcome(lambda: missing.call(1)),
        "not_json": outcome(lambda: double.call({1, 2})),
        "too_many": outcome(lambda: double.call_many([0] * 1025)),
    }
'''

EXPECTED = {
    "call": {"value": 42},
    "call_many": {"value": [2, 4, 6]},
    "empty": {"value": []},
    "user_error": {"CallFailed": ["USER_ERROR", "ZeroDivisionError: division by zero", True, "5"]},
    "user_error_many": {"CallFailed": ["USER_ERROR", "ZeroDivisionError: division by zero", True, None]},
    "not_found": {"BlockxError": "NOT_FOUND"},
    "not_json": {"BlockxError": "INVALID_ARGUMENT"},
    "too_many": {"BlockxError": "INVALID_ARGUMENT"},
}


@pytest.fixture(scope="module")
def names(dev):
    """Three names in dev's FUNCTIONS_DIR (the last never written) and an outer function probing them."""
    tag = uuid.uuid4().hex[:8]
    fdir = dev.env["FUNCTIONS_DIR"]
    double, fails, missing, outer, outer_async = (f"{k}_{tag}" for k in ("double", "fails", "missing", "outer", "outer_async"))
    files = {
        double: "def main(ctx, n):\n    return n * 2\n",
        fails: "def main(ctx, n):\n    return n / 0\n",
        outer: PROBE + f"\ndef main(ctx, names):\n    return probe(names)\n",
        # In an async entry call and call_many are awaitables of the same values.
        outer_async: "import blockx\n\nasync def main(ctx, names):\n    double = blockx.function(names[0])\n"
        "    return {\"call\": await double.call(21), \"call_many\": await double.call_many([1, 2, 3])}\n",
    }
    for name, src in files.items():
        with open(os.path.join(fdir, name + ".py"), "w") as f:
            f.write(src)
    return {"probe": [double, fails, missing], "outer": outer, "outer_async": outer_async}


def _until_known(client, name):
    """FUNCTIONS_DIR is re-read every second: wait (bounded) until the Sync Invoker knows `name`."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return client.precheck(name)
        except BlockxError as e:
            if e.code != "NOT_FOUND" or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_from_a_client_the_function_runs_on_the_sync_invoker(client, names):
    for n in names["probe"][:2] + [names["outer"]]:
        _until_known(client, n)
    # A client that imported the executor package (blockx.testing does) is still a client: only a
    # process serving a pool is an executor.
    import blockx_executor

    assert not blockx_executor.serving()
    ns: dict = {}
    exec(PROBE, ns)
    assert ns["probe"](names["probe"], lambda n: blockx.function(n, client=client)) == EXPECTED


def test_inside_an_executor_the_same_function_is_a_sub_call_with_the_same_outcomes(client, names):
    _until_known(client, names["outer"])
    # The outer call runs on the Sync Invoker; its Function calls are sub-calls there.
    assert client.invoke(names["outer"], names["probe"]) == EXPECTED
    # The same outer function as a task's call on a Worker: sub-calls of the task.
    assert client.run_task(function=names["outer"], inputs=[names["probe"]]).result() == [EXPECTED]


def test_an_async_entry_awaits_the_same_values(client, names):
    _until_known(client, names["outer_async"])
    assert client.invoke(names["outer_async"], names["probe"]) == {"call": 42, "call_many": [2, 4, 6]}


def test_a_file_outside_an_executor_sends_its_source(client, tmp_path):
    fn = tmp_path / "triple.py"
    fn.write_text("def main(ctx, n):\n    return n * 3\n\ndef other(ctx, n):\n    return -n\n")
    assert blockx.function(str(fn), client=client).call(5) == 15
    assert blockx.function(fn, entry="other", client=client).call_many([1, 2]) == [-1, -2]


@pytest.mark.parametrize("args, kwargs, fragment", [
    ((123,), {}, "expected a function name or a .py file path, not int"),
    (("no such.py",), {}, "is not a readable .py file"),
    (("bad name!",), {}, "is neither a .py file nor a function name"),
    (("double",), {"entry": "1x"}, "entry must be a Python identifier"),
    (("double",), {"timeout_ms": -1}, "timeout_ms must be an integer >= 0"),
])
def test_bad_input_is_refused_at_once_with_a_clear_error(args, kwargs, fragment):
    with pytest.raises(BlockxError) as ei:
        blockx.function(*args, **kwargs)
    assert ei.value.code == "INVALID_ARGUMENT" and fragment in str(ei.value)


def test_call_many_takes_a_list_only():
    with pytest.raises(BlockxError, match="expected a list of arguments, not str"):
        blockx.function("double").call_many("abc")
