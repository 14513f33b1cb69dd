"""run_tasks' batch path, with the rules of the TypeScript SDK's BatchRunner (src/sdk/batch-runner.ts):
at most ``concurrency`` tasks in flight, sent in batches (one ReserveWorkerSlots, then per Worker
one SubmitTasks and one WatchTasks stream whose terminal snapshots carry the results). Whatever a
batch cannot settle cleanly goes to run_task's path for that task alone: a grant refused (no slot,
not ready), a submit refused or unanswered, a watch that broke before the task ended. So every task
gets run_task's retry, back-off and resubmission rules, and idempotency by task id holds as it does
for run_task (a task handed over after its submit is followed, not submitted again)."""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

import grpc

from ._gen.bundlecoordinator.v1 import bundle_coordinator_pb2 as bpb
from ._gen.coordinator.v1 import coordinator_pb2 as cpb
from ._gen.worker.v1 import worker_pb2 as w
from ._run_elsewhere import parse_run_elsewhere
from .client import (Client, ClientEvent, RunResult, Snapshot, TaskHandle, TaskOutcome, _details, _now_ms, _result_of, _retryable, _status,
                     _submit_may_have_landed,
                     state_name)
from .errors import BlockxError
from .policy import Progress, ProgressMeter, cluster_for, resubmit_by_default

_INVALID_ARGUMENT = grpc.StatusCode.INVALID_ARGUMENT.value[0]
_ALREADY_EXISTS = grpc.StatusCode.ALREADY_EXISTS.value[0]
_NOT_FOUND = grpc.StatusCode.NOT_FOUND.value[0]
_FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION.value[0]
_STATUS_NAME = {s.value[0]: s.name for s in grpc.StatusCode}
#: Refusals that a fresh reservation may cure (as run_task retries them): the task goes alone.
_AGAIN = {grpc.StatusCode.UNAVAILABLE.value[0], grpc.StatusCode.DEADLINE_EXCEEDED.value[0], grpc.StatusCode.RESOURCE_EXHAUSTED.value[0],
          grpc.StatusCode.ABORTED.value[0], _NOT_FOUND, _FAILED_PRECONDITION}


@dataclass
class _Item:
    index: int
    task: w.Task
    cluster: str
    deadline: float
    resubmit: bool
    events: List[ClientEvent] = field(default_factory=list)
    #: "batch" while a batch holds it, "alone" once run_task's path does, "settled" at the end.
    state: str = "batch"


@dataclass(frozen=True)
class _Placed:
    item: _Item
    worker_addr: str
    slot_id: str
    coordinator: str


class BatchRunner:
    def __init__(self, client: Client, *, concurrency: int, batch_size: int, cluster: Optional[str], timeout: Optional[float],
                 resubmit: Optional[bool], max_attempts: Optional[int], on_progress: Optional[Callable[[Progress, Snapshot], None]],
                 on_event: Optional[Callable[[ClientEvent], None]], on_settled: Optional[Callable[[TaskOutcome], None]]) -> None:
        self._client = client
        self._concurrency = concurrency
        self._batch_size = batch_size
        self._cluster = cluster
        self._timeout = timeout
        self._resubmit = resubmit
        self._max_attempts = max_attempts
        self._cond = threading.Condition()
        #: User callbacks run one at a time, whichever thread calls them; the first one that raises is
        #: raised by run() once every task has settled (a task is never left unsettled by it).
        self._callbacks = threading.Lock()
        self._callback_error: Optional[BaseException] = None
        self._follows_progress = on_progress is not None
        self._on_progress = self._guarded(on_progress)
        self._on_event = self._guarded(on_event)
        self._on_settled = self._guarded(on_settled)
        self._out: List[Optional[TaskOutcome]] = []
        self._unsettled = 0
        self._inflight = 0

    def run(self, tasks: List[Any]) -> List[TaskOutcome]:
        self._out = [None] * len(tasks)
        self._unsettled = len(tasks)
        queues: Dict[str, Deque[_Item]] = {"block": deque(), "bundle": deque()}
        #: A task id repeated in the list runs alone after its first occurrence settled (an idempotent hit, as with run_task).
        repeats: Deque[_Item] = deque()
        seen = set()
        for i, given in enumerate(tasks):
            try:
                t = self._client.task(given)
                cl = cluster_for(t, self._cluster)
                item = _Item(i, t, cl, self._client._deadline(t, self._timeout), resubmit_by_default(t) if self._resubmit is None else bool(self._resubmit))
            except BlockxError as e:
                self._settle_invalid(i, _task_id_of(given), e)
                continue
            if t.task_id in seen:
                repeats.append(item)
                continue
            seen.add(t.task_id)
            queues[cl].append(item)
        # A batch goes once a quarter of it can: fewer, larger batches without starving the window.
        launch_at = max(1, -(-min(self._batch_size, self._concurrency) // 4))
        with self._cond:
            while self._unsettled > 0:
                while True:
                    free = self._concurrency - self._inflight
                    cl = "block" if queues["block"] else "bundle" if queues["bundle"] else None
                    if cl is None:
                        # Repeats go once every first occurrence has settled, so they find its result.
                        if repeats and self._inflight == 0:
                            self._inflight += 1
                            self._alone(repeats.popleft())
                            continue
                        break
                    queue = queues[cl]
                    if free < min(launch_at, len(queue)):
                        break
                    n = min(self._batch_size, free, len(queue))
                    batch = [queue.popleft() for _ in range(n)]
                    self._inflight += n
                    threading.Thread(target=self._run_batch, args=(batch, cl), name="blockx-batch", daemon=True).start()
                self._cond.wait()
        if self._callback_error is not None:
            raise self._callback_error
        return [o for o in self._out if o is not None]

    def _guarded(self, fn: Optional[Callable[..., None]]) -> Optional[Callable[..., None]]:
        if fn is None:
            return None

        def call(*args: Any) -> None:
            with self._callbacks:
                if self._callback_error is not None:
                    return
                try:
                    fn(*args)
                except BaseException as e:  # noqa: BLE001 - raised by run() at the end
                    self._callback_error = e
        return call

    # -- settling ------------------------------------------------------------------------------

    def _settle_invalid(self, index: int, task_id: str, e: BlockxError) -> None:
        outcome = TaskOutcome(index, task_id, error=e)
        self._out[index] = outcome
        self._unsettled -= 1
        if self._on_settled:
            self._on_settled(outcome)

    def _settle(self, item: _Item, run: Optional[RunResult] = None, error: Optional[BlockxError] = None) -> None:
        with self._cond:
            if item.state == "settled":
                return
            item.state = "settled"
            outcome = TaskOutcome(item.index, item.task.task_id, run, error)
            self._out[item.index] = outcome
        if self._on_settled:
            self._on_settled(outcome)
        with self._cond:
            self._inflight -= 1
            self._unsettled -= 1
            self._cond.notify()

    def _emit(self, item: _Item) -> Callable[[ClientEvent], None]:
        def emit(e: ClientEvent) -> None:
            e = {**e, "task_id": item.task.task_id}
            item.events.append(e)
            if self._on_event:
                self._on_event(e)
        return emit

    def _alone(self, item: _Item, handle: Optional[TaskHandle] = None) -> None:
        """_alone runs the task on run_task's path in a thread of its own (from its handle when
        the batch submitted it: followed there, never submitted again)."""
        item.state = "alone"

        def go() -> None:
            try:
                run = self._client._run_from(item.task, item.cluster, item.deadline, item.resubmit, self._max_attempts, self._emit(item),
                                             item.events, self._on_progress, handle)
            except BlockxError as e:
                self._settle(item, error=e)
            except Exception as e:  # noqa: BLE001 - settled, never lost
                self._settle(item, error=BlockxError("RPC_FAILED", f"task {item.task.task_id}: {e}"))
            else:
                self._settle(item, run=run)

        threading.Thread(target=go, name=f"blockx-task-{item.task.task_id}", daemon=True).start()

    # -- one batch -----------------------------------------------------------------------------

    def _run_batch(self, batch: List[_Item], cluster: str) -> None:
        try:
            # A batch of one costs three calls where run_task's path costs two (its SubmitTask
            # answers at a short task's end): it goes that way.
            if len(batch) == 1:
                return self._alone(batch[0])
            placed = self._reserve(batch, cluster)
            by_worker: Dict[str, List[_Placed]] = {}
            for p in placed:
                by_worker.setdefault(p.worker_addr, []).append(p)
            threads = [threading.Thread(target=self._submit_and_watch, args=(addr, ps, cluster), daemon=True) for addr, ps in by_worker.items()]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        except Exception as e:  # noqa: BLE001 - a task the batch still holds is settled, never lost
            for item in batch:
                if item.state == "batch":
                    self._settle(item, error=BlockxError("RPC_FAILED", f"task {item.task.task_id}: the batch failed: {e}"))

    def _reserve(self, batch: List[_Item], cluster: str) -> List[_Placed]:
        """_reserve asks one Coordinator for the batch's slots; a task without a grant goes alone (or fails: invalid)."""
        reservers = self._client._transport.reservers(cluster)
        # Batches take turns among the Coordinators; one that does not answer costs a batch a detour, not a failure.
        label, stub = reservers[int(self._client._rand() * len(reservers)) % len(reservers)]
        pb = cpb if cluster == "block" else bpb
        try:
            grants = stub.ReserveWorkerSlots(pb.ReserveWorkerSlotsRequest(task_ids=[i.task.task_id for i in batch]),
                                             timeout=self._client._rpc_timeout(min(i.deadline for i in batch))).grants
        except grpc.RpcError as e:
            failure = _retryable(e)
            for item in batch:
                if failure:
                    self._emit(item)({"kind": "reserveRefused", "failure": failure, "coordinator": label, "details": f"ReserveWorkerSlots: {_details(e)}", "delay_ms": 0})
                self._alone(item)
            return []
        placed: List[_Placed] = []
        for k, item in enumerate(batch):
            g = grants[k] if k < len(grants) else None
            if g is None or g.task_id != item.task.task_id:
                self._alone(item)
            elif g.status == 0 and g.slot_id:
                placed.append(_Placed(item, g.worker_addr, g.slot_id, label))
            elif g.status == _INVALID_ARGUMENT:
                self._settle(item, error=BlockxError("INVALID_ARGUMENT", f"ReserveWorkerSlot on {label}: {g.message}", "INVALID_ARGUMENT"))
            else:
                # No slot, not ready: run_task's back-off and rules take it from here.
                self._alone(item)
        return placed

    def _submit_and_watch(self, addr: str, placed: List[_Placed], cluster: str) -> None:
        """_submit_and_watch submits one Worker's share of a batch in one call and follows those tasks
        on one stream. Whatever goes wrong in it, a task it still holds goes on alone (followed there
        once submitted), never left unsettled."""
        submitted: Dict[str, _Placed] = {}
        try:
            self._submit_and_watch_on(addr, placed, cluster, submitted)
        except Exception as e:  # noqa: BLE001
            for p in placed:
                if p.item.state != "batch":
                    continue
                if p.item.task.task_id in submitted:
                    self._alone(p.item, TaskHandle(self._client, p.item.task.task_id, addr, p.slot_id, cluster, p.coordinator))
                else:
                    self._settle(p.item, error=BlockxError("RPC_FAILED", f"task {p.item.task.task_id}: SubmitTasks on {addr}: {e}"))

    def _submit_and_watch_on(self, addr: str, placed: List[_Placed], cluster: str, submitted: Dict[str, _Placed]) -> None:
        stub, md = self._client._transport.worker(addr)
        deadline = min(p.item.deadline for p in placed)
        try:
            outcomes = stub.SubmitTasks(w.SubmitTasksRequest(tasks=[w.SubmitTaskRequest(task=p.item.task, slot_id=p.slot_id) for p in placed]),
                                        metadata=md, timeout=self._client._rpc_timeout(deadline)).outcomes
        except grpc.RpcError as e:
            for p in placed:
                if _submit_may_have_landed(e):
                    # Unanswered once it may have reached the Worker (which may have started some): as
                    # after a lost SubmitTask answer, each is followed there first, never submitted elsewhere as new.
                    self._emit(p.item)({"kind": "submitUncertain", "attempt": 1, "worker_addr": addr, "code": _status(e), "details": _details(e)})
                    h = TaskHandle(self._client, p.item.task.task_id, addr, p.slot_id, cluster, p.coordinator)
                    h._uncertain = True
                    self._alone(p.item, h)
                else:
                    self._emit(p.item)({"kind": "submitRefused", "code": _status(e), "worker_addr": addr, "details": _details(e)})
                    self._alone(p.item)
            return
        running: Dict[str, Tuple[_Placed, ProgressMeter]] = {}
        for k, p in enumerate(placed):
            o = outcomes[k] if k < len(outcomes) else None
            if o is None or o.task_id != p.item.task.task_id:
                self._alone(p.item)
                continue
            if o.status == 0:
                self._emit(p.item)({"kind": "submitted", "attempt": 1, "worker_addr": addr, "slot_id": p.slot_id, "coordinator": p.coordinator,
                                    "state": state_name(o.snapshot.state)})
                running[p.item.task.task_id] = (p, ProgressMeter())
                submitted[p.item.task.task_id] = p
                continue
            elsewhere = parse_run_elsewhere(o.message) if o.status == _ALREADY_EXISTS else None
            if elsewhere is not None:
                # The task id's run is current on another Worker: followed there, not run twice.
                self._emit(p.item)({"kind": "attached", "attempt": 1, "refused_by": addr, "running_on": elsewhere.worker_addr, "state": elsewhere.state})
                self._alone(p.item, TaskHandle(self._client, p.item.task.task_id, elsewhere.worker_addr, p.slot_id, cluster, p.coordinator))
                continue
            code = _STATUS_NAME.get(o.status, str(o.status))
            self._emit(p.item)({"kind": "submitRefused", "code": code, "worker_addr": addr, "details": o.message})
            if o.status in _AGAIN:
                # The slot expired or belonged to an earlier incarnation, or a retryable refusal: reserve afresh.
                self._alone(p.item)
            else:
                self._settle(p.item, error=BlockxError("INVALID_ARGUMENT" if o.status == _INVALID_ARGUMENT else "RPC_FAILED",
                                                       f"SubmitTask {p.item.task.task_id} on {addr}: {code}: {o.message}", code))
        if not running:
            return
        outcome: Dict[str, Any] = {}
        # Without on_progress only the tasks' ends matter: the Worker sends nothing before them.
        for s in self._client._stream(stub, md, list(running), deadline, outcome, terminal_only=not self._follows_progress):
            entry = running.get(s.task_id)
            if entry is None:
                continue
            p, meter = entry
            if self._on_progress:
                self._on_progress(meter.update(s.calls_total, s.calls_succeeded, s.calls_failed, _now_ms()), Snapshot.of(s))
            if s.state not in (w.SUCCEEDED, w.FAILED, w.TIMED_OUT, w.CANCELLED):
                continue
            del running[s.task_id]
            if s.HasField("outputs"):
                r = _result_of(s)
                self._settle(p.item, run=RunResult(p.item.task.task_id, cluster, state_name(s.state), r, 1, [addr], p.item.events))
            else:
                # A Worker that predates with_results: run_task's path reads the result.
                self._alone(p.item, TaskHandle(self._client, p.item.task.task_id, addr, p.slot_id, cluster, p.coordinator))
            if not running:
                break
        # Whatever the stream did not see end (it broke, the Worker hung or went away) is followed alone.
        for p, _ in running.values():
            self._alone(p.item, TaskHandle(self._client, p.item.task.task_id, addr, p.slot_id, cluster, p.coordinator))


def _task_id_of(given: Any) -> str:
    if isinstance(given, w.Task):
        return given.task_id
    if isinstance(given, dict):
        return str(given.get("task_id", given.get("taskId", "")))
    return ""

