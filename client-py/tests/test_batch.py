"""run_tasks (the batch path: ReserveWorkerSlots, SubmitTasks, one WatchTasks stream per Worker)
against real processes of a private lane: each task once, per-task outcomes, a Worker killed
mid-batch, a batch resubmitted. "Exactly once" is read from the table store (a normal table
appends a row again for every run of a call)."""
import signal

import pytest

from support import rows
from test_retry_rules import client_for

from blockx import BlockxError, CallFailed

ROW = "import time\ndef main(ctx, input):\n    time.sleep(0.02)\n    n = input['blockNumber']\n    return [{'block': n}]\n"
SLOW_ROW = "import time\ndef main(ctx, input):\n    time.sleep(0.1)\n    n = input['blockNumber']\n    return [{'block': n}]\n"


def wait_registered(client, workers):
    """wait_registered: a reservation through the Coordinator until it has seen every Worker (a
    Worker prints its address before its first heartbeat); each probe's slot is used by a task."""
    seen = set()
    for _ in range(200):
        seen.update(client.run_task(source="def main(ctx, x):\n    return x\n", inputs=[0]).workers)
        if len(seen) == len(workers):
            return
    raise AssertionError(f"the Coordinator saw {sorted(seen)} of {[w.addr for w in workers]}")


def killer(workers, at_done):
    """killer: an on_progress that SIGKILLs the Worker of the first task to reach ``at_done`` calls."""
    state = {"killed": ""}

    def on_progress(p, s):
        if not state["killed"] and p.done >= at_done and s.worker_addr:
            state["killed"] = s.worker_addr
            next(w for w in workers if w.addr == s.worker_addr).kill(signal.SIGKILL)

    return state, on_progress


@pytest.mark.parametrize("mode", ["direct", "proxy"])
def test_more_tasks_than_free_slots_every_task_once(lane, mode):
    workers = [lane.worker(TASK_SLOTS="2"), lane.worker(TASK_SLOTS="2")]
    coord = lane.coordinator()
    table = f"over_{mode}"
    with client_for(lane, [coord.addr], mode) as client:
        wait_registered(client, workers)
        tasks = [client.task(source=ROW, blocks=range(100 + i, 101 + i), table=table, append=True, task_id=f"over-{mode}-{i}") for i in range(12)]
        settled = []
        outcomes = client.run_tasks(tasks, concurrency=12, batch_size=12, on_settled=settled.append)
    assert [o.task_id for o in outcomes] == [t.task_id for t in tasks]  # the input's order
    assert [(o.ok, o.run.state) for o in outcomes] == [(True, "SUCCEEDED")] * 12
    assert sorted(o.task_id for o in settled) == sorted(t.task_id for t in tasks)
    # Four slots for twelve tasks: some were refused in the batch and went on alone (run_task's back-off).
    assert any(e["kind"] == "reserveRefused" for o in outcomes for e in o.run.events)
    assert all(e["task_id"] == o.task_id for o in outcomes for e in o.run.events)
    assert {o.run.workers[-1] for o in outcomes} == {w.addr for w in workers}
    assert [r[0] for r in rows(lane.table_store, table, "block")] == list(range(100, 112))


def test_mixed_valid_and_invalid_tasks_each_answered_on_its_own(lane):
    lane.worker()
    coord = lane.coordinator()
    with client_for(lane, [coord.addr]) as client:
        tasks = [
            client.task(source=ROW, blocks=range(1, 2), table="mixed", append=True, task_id="ok-1"),
            {"task_id": "no-config", "outputs": [{"return_value": {}}]},
            client.task(source="def main(ctx, x):\n    return 10 // x\n", inputs=[5, 0], task_id="fails"),
            client.task(source=ROW, blocks=range(2, 3), table="mixed", append=True, task_id="ok-2"),
        ]
        outcomes = client.run_tasks(tasks, concurrency=8)
    assert [o.task_id for o in outcomes] == ["ok-1", "no-config", "fails", "ok-2"]
    assert [o.ok for o in outcomes] == [True, False, True, True]
    assert outcomes[1].error.code == "INVALID_ARGUMENT" and outcomes[1].run is None
    # A task whose call raised ran to its end: a RunResult that raises the user's failure.
    assert outcomes[2].run.state == "FAILED"
    with pytest.raises(CallFailed) as ei:
        outcomes[2].run.result()
    assert "ZeroDivisionError" in str(ei.value) and ei.value.call_input == "0"
    assert [r[0] for r in rows(lane.table_store, "mixed", "block")] == [1, 2]


def test_a_worker_sigkilled_mid_batch_its_tasks_rerun_elsewhere_rows_once_per_block(lane):
    workers = [lane.worker(), lane.worker()]
    coord = lane.coordinator()
    state, on_progress = killer(workers, 3)
    with client_for(lane, [coord.addr], BLOCKX_WORKER_LOST_AFTER_MS="1500") as client:
        wait_registered(client, workers)
        tasks = [client.task(source=SLOW_ROW, blocks=range(1000 + i * 10, 1010 + i * 10), table="replaced", task_id=f"kill-{i}") for i in range(8)]
        outcomes = client.run_tasks(tasks, concurrency=8, batch_size=8, on_progress=on_progress)
    assert state["killed"], "no Worker was killed: the test proved nothing"
    assert [(o.ok, o.run.state) for o in outcomes] == [(True, "SUCCEEDED")] * 8
    rerun = [o for o in outcomes if o.run.attempts > 1]
    assert rerun, "no task was rerun"
    assert all(o.run.workers[0] == state["killed"] and o.run.workers[-1] != state["killed"] for o in rerun)
    assert [r[0] for r in rows(lane.table_store, "replaced", "block")] == list(range(1000, 1080))


def test_a_batch_resubmitted_with_the_same_task_ids_runs_no_task_twice(lane):
    lane.worker()
    coord = lane.coordinator()
    with client_for(lane, [coord.addr]) as client:
        tasks = [client.task(source=ROW, blocks=range(200 + i, 201 + i), table="again", append=True, task_id=f"again-{i}") for i in range(6)]
        first = client.run_tasks(tasks, concurrency=6)
        # The same batch again, and one task twice in one list: every answer is the first run's.
        second = client.run_tasks(tasks + [tasks[0]], concurrency=8)
    assert [o.run.state for o in first] == ["SUCCEEDED"] * 6
    assert [o.run.state for o in second] == ["SUCCEEDED"] * 7
    assert [r[0] for r in rows(lane.table_store, "again", "block")] == list(range(200, 206))


def test_batches_of_one_take_run_tasks_own_path_and_values_come_back_in_order(lane):
    worker = lane.worker()
    coord = lane.coordinator()
    with client_for(lane, [coord.addr]) as client:
        wait_registered(client, [worker])
        tasks = [client.task(source="def main(ctx, x):\n    return x * 3\n", inputs=[i, i + 1], task_id=f"one-{i}") for i in range(3)]
        outcomes = client.run_tasks(tasks, concurrency=3, batch_size=1)
    assert [o.run.result() for o in outcomes] == [[0, 3], [3, 6], [6, 9]]
    # Each answered by its own waiting SubmitTask (run_task's path), not by a watch.
    assert [[(e["kind"], e.get("state")) for e in o.run.events if e["kind"] != "reserveRefused"] for o in outcomes] == [[("submitting", None), ("submitted", "SUCCEEDED")]] * 3


def test_bad_arguments_get_clear_errors(lane):
    coord = lane.coordinator()
    with client_for(lane, [coord.addr]) as client:
        for kwargs, words in [({"batch_size": 0}, "batch_size: a whole number from 1 to 1024"), ({"batch_size": 2000}, "from 1 to 1024, not 2000"),
                              ({"concurrency": 0}, "concurrency: a whole number of tasks >= 1"), ({"timeout": -1}, "timeout must be > 0")]:
            with pytest.raises(BlockxError) as ei:
                client.run_tasks([], **kwargs)
            assert ei.value.code == "INVALID_ARGUMENT" and words in str(ei.value)
        assert client.run_tasks([]) == []


def test_append_tasks_of_a_killed_worker_are_rerun_and_each_call_lands_once(lane):
    # A normal_table_write is resubmitted too: a task the batch submitted to a Worker that dies is
    # followed there, then rerun on the other, whose calls replace what the same calls of the lost
    # run appended: every block's row once.
    workers = [lane.worker(), lane.worker()]
    coord = lane.coordinator()
    state, on_progress = killer(workers, 2)
    with client_for(lane, [coord.addr], BLOCKX_WORKER_LOST_AFTER_MS="1500") as client:
        wait_registered(client, workers)
        tasks = [client.task(source=SLOW_ROW, blocks=range(500 + i * 10, 510 + i * 10), table="appended", append=True, task_id=f"append-{i}") for i in range(6)]
        outcomes = client.run_tasks(tasks, concurrency=6, batch_size=6, on_progress=on_progress)
        assert state["killed"], "no Worker was killed: the test proved nothing"
        assert all(o.ok and o.run.state == "SUCCEEDED" for o in outcomes), [str(o.error) for o in outcomes if not o.ok]
        assert any(o.run.attempts == 2 and o.run.workers[0] == state["killed"] for o in outcomes), "no task was rerun"
    got = [r[0] for r in rows(lane.table_store, "appended", "block")]
    assert sorted(got) == list(range(500, 560))  # every block once: none lost, none appended twice


def test_a_callback_that_raises_is_raised_once_every_task_settled(lane):
    lane.worker()
    coord = lane.coordinator()
    with client_for(lane, [coord.addr]) as client:
        tasks = [client.task(source=ROW, blocks=range(700 + i, 701 + i), table="callback", append=True, task_id=f"cb-{i}") for i in range(4)]
        seen = []

        def on_settled(o):
            seen.append(o.task_id)
            raise RuntimeError(f"the caller's own bug at {o.task_id}")

        with pytest.raises(RuntimeError, match="the caller's own bug"):
            client.run_tasks(tasks, concurrency=4, batch_size=4, on_settled=on_settled)
    assert len(seen) == 1  # no callback after the first one raised
    # Every task still ran to its end, once.
    assert [r[0] for r in rows(lane.table_store, "callback", "block")] == [700, 701, 702, 703]
