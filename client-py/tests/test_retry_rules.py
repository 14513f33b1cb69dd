"""Each client rule against real processes: Coordinators and Workers of a private lane on dev's
etcd (these tests kill and stop them, which would end `blockx dev` itself)."""
import os
import signal
import socket
import threading
import time

import pytest

from support import rows

from blockx import BlockxError, Client

ECHO = "def main(ctx, x):\n    return x * 2\n"
SLOW_ROWS = "import time\ndef main(ctx, input):\n    time.sleep(0.05)\n    n = input['blockNumber']\n    return [{'block': n, 'double': n * 2}]\n"


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def refusals(events, failure):
    return [e for e in events if e["kind"] == "reserveRefused" and e["failure"] == failure]


def client_for(lane, coordinators, mode="direct", **env):
    extra = {}
    if mode == "proxy":
        extra["PROXY_SOCKET_PATH"] = lane.proxy(coordinators)
    return Client.from_env({"BLOCKX_COORDINATOR_ADDRS": ",".join(coordinators), "BLOCKX_INSECURE": "1", **env, **extra}, direct=(mode == "direct"))


@pytest.mark.parametrize("mode", ["direct", "proxy"])
def test_unavailable_moves_at_once_to_the_next_coordinator(lane, mode):
    # A Coordinator whose etcd never answers is not ready: it answers UNAVAILABLE.
    blind = lane.coordinator(ETCD_ENDPOINTS=f"127.0.0.1:{free_port()}")
    worker = lane.worker()
    good = lane.coordinator()
    with client_for(lane, [blind.addr, good.addr], mode) as client:
        run = client.run_task(source=ECHO, inputs=[1, 2, 3])
    assert run.result() == [2, 4, 6]
    assert run.workers == [worker.addr]
    refused = refusals(run.events, "UNAVAILABLE")
    assert len(refused) >= 1
    # Retried at once: jitter of at most 50 ms on the first round of the list.
    assert refused[0]["delay_ms"] <= 50
    submitted = [e for e in run.events if e["kind"] == "submitted"]
    if mode == "direct":
        assert refused[0]["coordinator"] == blind.addr
        assert submitted[0]["coordinator"] == good.addr
    else:
        assert submitted[0]["coordinator"].startswith("proxy:")


def test_resource_exhausted_backs_off_until_a_slot_unless_a_deadline(lane):
    worker = lane.worker(TASK_SLOTS="1")
    coord = lane.coordinator()
    with client_for(lane, [coord.addr]) as client:
        client.run_task(source=ECHO, inputs=[0])  # the Coordinator has listed the Worker
        busy = client.submit(source="import time\ndef main(ctx, x):\n    time.sleep(x)\n    return x\n", inputs=[4])
        with pytest.raises(BlockxError) as ei:
            client.run_task(source=ECHO, inputs=[1], timeout=1.0)
        assert ei.value.code == "NO_CAPACITY"
        assert "no free slot before the deadline; last answer: " in str(ei.value)
        assert "RESOURCE_EXHAUSTED from " in str(ei.value)
        run = client.run_task(source=ECHO, inputs=[5])
        assert run.result() == [10]
        assert run.workers == [worker.addr]
        refused = refusals(run.events, "RESOURCE_EXHAUSTED")
        assert len(refused) >= 2
        delays = [e["delay_ms"] for e in refused]
        assert max(delays) > delays[0]  # exponential back-off
        assert busy.result() == [4]


def test_aborted_waits_one_slot_ttl(lane):
    worker = lane.worker()
    coord = lane.coordinator(COORDINATOR_WORKER_RPC_TIMEOUT_MS="300")
    with client_for(lane, [coord.addr], BLOCKX_SLOT_TTL_MS="1500") as client:
        client.run_task(source=ECHO, inputs=[0])
        worker.kill(signal.SIGSTOP)
        marks = {}

        def on_event(e):
            if e["kind"] == "reserveRefused" and e["failure"] == "ABORTED" and "aborted" not in marks:
                marks["aborted"] = time.monotonic()
                os.kill(worker.p.pid, signal.SIGCONT)
            if e["kind"] == "submitted":
                marks["submitted"] = time.monotonic()

        try:
            run = client.run_task(source=ECHO, inputs=[21], on_event=on_event)
        finally:
            os.kill(worker.p.pid, signal.SIGCONT)
    assert run.result() == [42]
    aborted = refusals(run.events, "ABORTED")
    assert len(aborted) >= 1
    assert all(e["delay_ms"] >= 1500 for e in aborted)
    assert marks["submitted"] - marks["aborted"] >= 1.5


def _kill_when(lane, workers, at_done):
    state = {"running": "", "killed": ""}

    def on_event(e):
        if e["kind"] == "submitted":
            state["running"] = e["worker_addr"]

    def on_progress(p, s):
        if not state["killed"] and state["running"] and p.done >= at_done:
            state["killed"] = state["running"]
            next(w for w in workers if w.addr == state["running"]).kill(signal.SIGKILL)

    return state, on_event, on_progress


@pytest.mark.parametrize("mode", ["direct", "proxy"])
def test_worker_sigkilled_mid_task_is_survived_with_exactly_once_rows(lane, mode):
    workers = [lane.worker(), lane.worker()]
    coord = lane.coordinator()
    table = f"resubmitted_{mode}"
    with client_for(lane, [coord.addr], mode, BLOCKX_WORKER_LOST_AFTER_MS="1500") as client:
        state, on_event, on_progress = _kill_when(lane, workers, 20)
        run = client.run_task(source=SLOW_ROWS, blocks=range(0, 120), table=table, on_event=on_event, on_progress=on_progress)
    assert state["killed"], "the Worker was never killed: the test proved nothing"
    assert run.state == "SUCCEEDED"
    assert run.attempts == 2
    assert run.workers[0] == state["killed"] and run.workers[1] != state["killed"]
    lost = [e for e in run.events if e["kind"] == "workerLost"]
    assert len(lost) == 1 and lost[0]["resubmit"] is True
    got = rows(lane.table_store, table, "block")
    assert [r[0] for r in got] == list(range(0, 120))  # every block once: no gap, no duplicate
    assert all(r[1] == r[0] * 2 for r in got)


def test_append_task_is_resubmitted_and_each_call_lands_once(lane):
    workers = [lane.worker(), lane.worker()]
    coord = lane.coordinator()
    with client_for(lane, [coord.addr], BLOCKX_WORKER_LOST_AFTER_MS="1500") as client:
        state, on_event, on_progress = _kill_when(lane, workers, 10)
        run = client.run_task(source=SLOW_ROWS, blocks=range(0, 120), table="appended", append=True, on_event=on_event, on_progress=on_progress)
    assert state["killed"]
    assert (run.state, run.attempts, run.workers[0]) == ("SUCCEEDED", 2, state["killed"])
    got = rows(lane.table_store, "appended", "block")
    assert [r[0] for r in got] == list(range(0, 120))  # the lost run's appends were replaced call by call: every block once
