"""Client: the Python client of a BlockX cluster, with the rules of the TypeScript SDK
(src/sdk/blockx-client.ts): reserve a slot through a Coordinator, submit to that Worker, watch
until terminal; retry Unavailable on the next Coordinator with jitter, back off on
ResourceExhausted until a slot or the deadline, wait one slot TTL after Aborted; resubmit when
the Worker running the task is lost (by default only when every output is idempotent). Through
PROXY_SOCKET_PATH every call goes via ``blockx proxy``."""
from __future__ import annotations

import json
import queue
import random
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

import grpc

from ._gen.bundlecoordinator.v1 import bundle_coordinator_pb2_grpc as bcg
from ._gen.coordinator.v1 import coordinator_pb2 as cpb
from ._gen.coordinator.v1 import coordinator_pb2_grpc as cg
from ._gen.syncinvoker.v1 import sync_invoker_pb2 as spb
from ._gen.syncinvoker.v1 import sync_invoker_pb2_grpc as sg
from ._gen.worker.v1 import worker_pb2 as w
from ._gen.worker.v1 import worker_pb2_grpc as wg
from .config import ClientConfig
from .errors import BlockxError, CallFailed
from ._run_elsewhere import parse_run_elsewhere
from .policy import GiveUp, Progress, ProgressMeter, ReservePolicy, RetryPolicyConfig, cluster_for, resubmit_by_default
from .progress import ProgressDisplay
from .tasks import build_task, function_ref, task_from_dict, validate_task

#: The header the proxy routes worker.v1 calls by (runtime seed).
WORKER_ADDR_HEADER = "x-blockx-worker-addr"
TERMINAL_STATES = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED"})
DEFAULT_TASK_TIMEOUT_MS = 300_000
RUN_MARGIN_MS = 60_000
POLL_INTERVAL_S = 0.5
#: A watch stream this quiet is checked with a GetTaskResult probe (a hung Worker sends nothing).
STREAM_QUIET_S = 1.0
#: The largest batch the Coordinators' ReserveWorkerSlots and the Workers' SubmitTasks take.
MAX_BATCH_SIZE = 1024
DEFAULT_BATCH_SIZE = 256
DEFAULT_CONCURRENCY = 4

_RETRYABLE_STATUS = {
    grpc.StatusCode.UNAVAILABLE: "UNAVAILABLE",
    grpc.StatusCode.DEADLINE_EXCEEDED: "UNAVAILABLE",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "RESOURCE_EXHAUSTED",
    grpc.StatusCode.ABORTED: "ABORTED",
}
_CODE_BY_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: "INVALID_ARGUMENT",
    grpc.StatusCode.UNAVAILABLE: "UNREACHABLE",
    grpc.StatusCode.DEADLINE_EXCEEDED: "UNREACHABLE",
    grpc.StatusCode.NOT_FOUND: "NOT_FOUND",
    grpc.StatusCode.UNIMPLEMENTED: "UNSUPPORTED",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "NO_CAPACITY",
}


def _now_ms() -> float:
    """The client's clock, in ms: monotonic, so deadlines and intervals (a quiet stream, an unreachable
    Worker, progress rates) stay right when the wall clock is stepped. grpcio takes relative timeouts."""
    return time.monotonic() * 1000


#: run_task's SubmitTask asks the Worker to answer at the task's end if that comes within this long
#: (wait_ms): a short task's result arrives with the answer and no WatchTasks is opened. Not when
#: the caller follows progress, which the watch delivers as it happens.
SUBMIT_WAIT_MS = 1000
#: grpcio's wording for a call that never left (no connection could be made: it reached no Worker).
_NEVER_SENT = re.compile(r"failed to connect to all addresses|Connection refused|DNS resolution failed|No route to host|Network is unreachable")


def _submit_may_have_landed(e: grpc.RpcError) -> bool:
    """_submit_may_have_landed: a SubmitTask(s) failed in a way that says nothing of whether the
    Worker took it (the connection dropped or the deadline passed after the request went out)."""
    may = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL)
    return e.code() in may and not _NEVER_SENT.search(_details(e))  # type: ignore[attr-defined]


def _older_run(snapshot: Any, newest: List[int]) -> bool:
    """_older_run notes a snapshot's run generation in ``newest`` and says whether it is of a run
    older than the newest heard of (0: a task that writes no table, or an older Worker)."""
    g = int(getattr(snapshot, "run_generation", 0) or 0)
    if g == 0:
        return False
    if g < newest[0]:
        return True
    newest[0] = g
    return False


def _retryable(e: BaseException) -> Optional[str]:
    return _RETRYABLE_STATUS.get(e.code()) if isinstance(e, grpc.RpcError) else None  # type: ignore[attr-defined]


def _result_of(s: w.TaskSnapshot) -> w.TaskResult:
    """_result_of: the TaskResult a terminal snapshot of a with_results watch carries, as
    GetTaskResult would answer it (the snapshot without its outputs)."""
    snapshot = w.TaskSnapshot()
    snapshot.CopyFrom(s)
    snapshot.ClearField("outputs")
    o = s.outputs
    r = w.TaskResult(snapshot=snapshot, return_values=list(o.return_values), writes=list(o.writes))
    if o.HasField("first_error"):
        r.first_error.CopyFrom(o.first_error)
    return r


def _details(e: BaseException) -> str:
    return e.details() if isinstance(e, grpc.RpcError) else str(e)  # type: ignore[attr-defined]


def _status(e: BaseException) -> str:
    return e.code().name if isinstance(e, grpc.RpcError) else "UNKNOWN"  # type: ignore[attr-defined]


def to_error(e: BaseException, what: str) -> BlockxError:
    """to_error: the one place a gRPC failure becomes a BlockxError code."""
    if isinstance(e, BlockxError):
        return e
    if not isinstance(e, grpc.RpcError):
        return BlockxError("RPC_FAILED", f"{what}: {e}")
    code = e.code()  # type: ignore[attr-defined]
    return BlockxError(_CODE_BY_STATUS.get(code, "RPC_FAILED"), f"{what}: {code.name}: {e.details()}", code.name)  # type: ignore[attr-defined]


def state_name(state: int) -> str:
    return w.TaskState.Name(state)


@dataclass(frozen=True)
class Snapshot:
    """Snapshot: where a task stands (worker.v1.TaskSnapshot with names for enums)."""

    task_id: str
    worker_addr: str
    state: str
    phase: str
    calls_total: int
    calls_succeeded: int
    calls_failed: int
    calls_retried: int
    error_code: str
    error_message: str
    #: The run of the task on that Worker (its generation; 0: the task writes no table).
    run_generation: int = 0

    @property
    def done(self) -> int:
        return self.calls_succeeded + self.calls_failed

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    @staticmethod
    def of(s: w.TaskSnapshot) -> "Snapshot":
        return Snapshot(s.task_id, s.worker_addr, state_name(s.state), w.TaskPhase.Name(s.phase), s.calls_total,
                        s.calls_succeeded, s.calls_failed, s.calls_retried, s.error.code, s.error.message, s.run_generation)


#: ClientEvent: what the client did on the way (for logs, progress displays and tests), a dict with
#: "kind" in reserveRefused {failure, coordinator, details, delay_ms}, submitRefused {code,
#: worker_addr, details}, submitting {attempt, worker_addr, slot_id, coordinator: a SubmitTask is being
#: sent there; it may wait up to 1 s for the task's end before submitted}, submitted {attempt, worker_addr, slot_id, coordinator, state: what SubmitTask
#: answered}, submitUncertain {attempt, worker_addr, code, details: a waiting SubmitTask failed after it
#: may have reached the Worker; the task is followed there}, watchFailed {worker_addr, code, details},
#: workerLost {attempt, worker_addr, reason, resubmit}.
ClientEvent = Dict[str, Any]


def _call_failed(result: w.TaskResult, task_id: str) -> Optional[CallFailed]:
    state = state_name(result.snapshot.state)
    if state == "SUCCEEDED":
        return None
    fe = result.first_error
    if fe.code:
        return CallFailed(fe.code, fe.message, fe.traceback, call_input=fe.call_input or None, call_index=fe.call_index,
                          call_id=fe.call_id, task_id=task_id, state=state)
    err = result.snapshot.error
    return CallFailed(err.code or state, err.message or f"the task ended {state}", task_id=task_id, state=state)


@dataclass
class RunResult:
    """RunResult: a task that reached a terminal state, and how it got there. A FAILED task is a
    RunResult too (``succeeded`` false); ``result()`` raises its first failing call."""

    task_id: str
    cluster: str
    state: str
    raw: w.TaskResult
    attempts: int = 1
    workers: List[str] = field(default_factory=list)
    events: List[ClientEvent] = field(default_factory=list)

    @property
    def succeeded(self) -> bool:
        return self.state == "SUCCEEDED"

    @property
    def values(self) -> List[Any]:
        """The JSON values of a return_value task, by call index (input order)."""
        return [json.loads(b) for b in self.raw.return_values]

    @property
    def writes(self) -> List[Dict[str, Any]]:
        return [{"table": x.table, "handler": x.handler, "rows_written": x.rows_written, "calls_written": x.calls_written} for x in self.raw.writes]

    @property
    def snapshot(self) -> Snapshot:
        return Snapshot.of(self.raw.snapshot)

    @property
    def error(self) -> Optional[CallFailed]:
        """The first failing call as an exception (None when the task succeeded)."""
        return _call_failed(self.raw, self.task_id)

    def result(self) -> List[Any]:
        """result: the values in input order, or raises CallFailed for the first failing call
        (with its input and the user's Python traceback)."""
        err = self.error
        if err is not None:
            raise err
        return self.values


@dataclass(frozen=True)
class TaskOutcome:
    """TaskOutcome: how one task of ``run_tasks`` ended. ``run`` when it ran to a terminal state
    (a FAILED task too: ``run.result()`` raises its failure); ``error`` when it could not (invalid,
    no capacity before the deadline, its Worker lost and not resubmitted)."""

    index: int
    task_id: str
    run: Optional[RunResult] = None
    error: Optional[BlockxError] = None

    @property
    def ok(self) -> bool:
        return self.error is None


class _Transport:
    """_Transport owns the channels. Direct: one channel per address. Through the proxy: one
    channel to the Unix socket; a Worker is named by the x-blockx-worker-addr header."""

    def __init__(self, config: ClientConfig) -> None:
        self._config = config
        self._channels: Dict[str, grpc.Channel] = {}
        self._lock = threading.Lock()
        self._options = [
            ("grpc.keepalive_time_ms", config.keepalive_time_ms),
            ("grpc.keepalive_timeout_ms", 5000),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.max_receive_message_length", 64 * 1024 * 1024),
            ("grpc.max_send_message_length", 64 * 1024 * 1024),
        ]

    @property
    def via_proxy(self) -> bool:
        return self._config.proxy_socket_path != ""

    def channel(self, addr: str) -> grpc.Channel:
        target = f"unix:{self._config.proxy_socket_path}" if self.via_proxy else addr
        with self._lock:
            ch = self._channels.get(target)
            if ch is None:
                ch = self._open(target)
                self._channels[target] = ch
            return ch

    def _open(self, target: str) -> grpc.Channel:
        # The proxy's Unix socket is local (the proxy logs the peer's uid and holds its own
        # certificate upstream); a direct channel is mTLS, or plaintext only when chosen.
        if self.via_proxy or self._config.insecure:
            return grpc.insecure_channel(target, options=self._options)
        if self._config.tls is None:
            raise BlockxError(
                "INVALID_ARGUMENT",
                "BLOCKX_TLS_CA_FILE, BLOCKX_TLS_CERT_FILE, BLOCKX_TLS_KEY_FILE: expected all three (mTLS), "
                "or BLOCKX_INSECURE=1 to choose plaintext, got none",
            )
        ca, cert, key = self._config.tls.read()
        creds = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)
        return grpc.secure_channel(target, creds, options=self._options)

    def reservers(self, cluster: str) -> List[Tuple[str, Any]]:
        addrs = self._config.coordinator_addrs if cluster == "block" else self._config.bundle_coordinator_addrs
        targets = [f"proxy:{self._config.proxy_socket_path}"] if self.via_proxy else list(addrs)
        stub = cg.CoordinatorServiceStub if cluster == "block" else bcg.BundleCoordinatorServiceStub
        return [(t, stub(self.channel(t))) for t in targets]

    def worker(self, addr: str) -> Tuple[wg.WorkerServiceStub, Tuple[Tuple[str, str], ...]]:
        md = ((WORKER_ADDR_HEADER, addr),) if self.via_proxy else ()
        return wg.WorkerServiceStub(self.channel(addr)), md

    def syncinvoker(self) -> sg.SyncInvokerServiceStub:
        return sg.SyncInvokerServiceStub(self.channel(self._config.syncinvoker_addr))

    def close(self) -> None:
        with self._lock:
            for ch in self._channels.values():
                ch.close()
            self._channels.clear()


class TaskHandle:
    """TaskHandle: a submitted task on the Worker that holds it (returned by ``submit``)."""

    def __init__(self, client: "Client", task_id: str, worker_addr: str, slot_id: str = "", cluster: str = "",
                 coordinator: str = "", snapshot: Optional[Snapshot] = None) -> None:
        self._client = client
        self.task_id = task_id
        self.worker_addr = worker_addr
        self.slot_id = slot_id
        self.cluster = cluster
        self.coordinator = coordinator
        self.snapshot = snapshot
        #: The result SubmitTask answered with (it waited for the task's end), if it did.
        self._answered: Optional[w.TaskResult] = None
        #: The SubmitTask that named this Worker failed after it may have reached it: the task may
        #: run there, or never have arrived (a Worker that then does not know it: submitted again).
        self._uncertain = False

    def __repr__(self) -> str:
        return f"<TaskHandle {self.task_id} on {self.worker_addr}>"

    def watch(self, timeout: Optional[float] = None) -> Iterator[Snapshot]:
        """watch yields the task's snapshots until it is terminal (the last one yielded is
        terminal). BlockxError(WORKER_LOST) if its Worker went away; DEADLINE_EXCEEDED after
        ``timeout`` seconds."""
        deadline = _now_ms() + (timeout * 1000 if timeout is not None else 8 * 3600_000)
        for kind, value in self._client._follow(self.task_id, self.worker_addr, deadline, lambda e: None):
            if kind == "snapshot":
                yield Snapshot.of(value)
            elif kind in ("lost", "notfound"):
                raise BlockxError("WORKER_LOST", f"task {self.task_id}: Worker {self.worker_addr} was lost ({value})")

    def wait(self, timeout: Optional[float] = None, progress: Union[bool, str] = False) -> RunResult:
        """wait follows the task to its terminal state and returns its RunResult (no resubmission)."""
        deadline = _now_ms() + (timeout * 1000 if timeout is not None else 8 * 3600_000)
        return self._client._wait(self.task_id, self.worker_addr, deadline, progress, self.cluster)

    def result(self, timeout: Optional[float] = None) -> List[Any]:
        """result waits, then returns the values in input order or raises the first failing call."""
        return self.wait(timeout).result()

    def cancel(self, reason: str = "cancelled by client") -> Snapshot:
        return self._client.cancel(self.task_id, self.worker_addr, reason)


@dataclass(frozen=True)
class Diagnostic:
    severity: str
    code: str
    message: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.line}:{self.column} {self.severity} {self.code}: {self.message}"


@dataclass(frozen=True)
class PrecheckResult:
    ok: bool
    diagnostics: List[Diagnostic]
    digest: str
    entry: str


@dataclass(frozen=True)
class DebugResult:
    """DebugResult of debug_invoke: the value or the error, plus what the call printed
    (``stdout``), its ``ctx.log`` lines, the IO trace and the durations."""

    call_id: str
    value: Any
    error: Optional[CallFailed]
    stdout: str
    logs: List[Dict[str, Any]]
    io_trace: List[Dict[str, Any]]
    traceback: str
    durations: Dict[str, float]

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


class Client:
    """Client of a BlockX cluster. ``Client.from_env()`` reads the variables ``blockx dev``
    writes; use as a context manager or call ``close()``."""

    def __init__(self, config: Optional[ClientConfig] = None, *, rand: Callable[[], float] = random.random) -> None:
        self.config = config or ClientConfig()
        self._transport = _Transport(self.config)
        self._rand = rand

    @staticmethod
    def from_env(env: Optional[Mapping[str, str]] = None, *, direct: bool = False) -> "Client":
        """from_env: through PROXY_SOCKET_PATH when set (unless ``direct``), else straight to
        BLOCKX_COORDINATOR_ADDRS / BLOCKX_BUNDLE_COORDINATOR_ADDRS / BLOCKX_SYNCINVOKER_ADDR."""
        return Client(ClientConfig.from_env(env, direct=direct))

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def via_proxy(self) -> bool:
        return self._transport.via_proxy

    # -- tasks ---------------------------------------------------------------------------------

    def task(self, task: Optional[Union[w.Task, Mapping[str, Any]]] = None, **kwargs: Any) -> w.Task:
        """task builds a worker.v1.Task from a task dict, a Task message, or keyword arguments
        (see blockx.tasks.build_task)."""
        if task is not None:
            if kwargs:
                raise BlockxError("INVALID_ARGUMENT", f"give a task or keyword arguments, not both ({', '.join(sorted(kwargs))})")
            if isinstance(task, w.Task):
                validate_task(task)
                return task
            return task_from_dict(task)
        try:
            return build_task(**kwargs)
        except TypeError as e:
            raise BlockxError("INVALID_ARGUMENT", str(e)) from None

    def run_task(self, task: Optional[Union[w.Task, Mapping[str, Any]]] = None, *, progress: Union[bool, str] = False,
                 cluster: Optional[str] = None, timeout: Optional[float] = None, resubmit: Optional[bool] = None,
                 max_attempts: Optional[int] = None, on_progress: Optional[Callable[[Progress, Snapshot], None]] = None,
                 on_event: Optional[Callable[[ClientEvent], None]] = None, **kwargs: Any) -> RunResult:
        """run_task runs a task to its terminal state and returns a RunResult (a FAILED task
        returns too: call ``.result()`` for the values or the raised failure). ``timeout``:
        seconds for the whole run, retries included (default the task's timeout + 60 s).
        ``resubmit``: rerun when the Worker is lost (default: unless it appends to a normal
        table). Ctrl-C leaves the task running and prints how to follow or cancel it."""
        t = self.task(task, **kwargs)
        events: List[ClientEvent] = []

        def emit(e: ClientEvent) -> None:
            events.append(e)
            if on_event:
                on_event(e)

        resub = resubmit_by_default(t) if resubmit is None else bool(resubmit)
        return self._run_from(t, cluster_for(t, cluster), self._deadline(t, timeout), resub, max_attempts, emit, events, on_progress, progress=progress)

    def run_tasks(self, tasks: Iterable[Union[w.Task, Mapping[str, Any]]], *, concurrency: int = DEFAULT_CONCURRENCY,
                  batch_size: int = DEFAULT_BATCH_SIZE, cluster: Optional[str] = None, timeout: Optional[float] = None,
                  resubmit: Optional[bool] = None, max_attempts: Optional[int] = None,
                  on_progress: Optional[Callable[[Progress, Snapshot], None]] = None, on_event: Optional[Callable[[ClientEvent], None]] = None,
                  on_settled: Optional[Callable[[TaskOutcome], None]] = None) -> List[TaskOutcome]:
        """run_tasks runs many tasks (task dicts or Task messages) with at most ``concurrency`` in
        flight, through the batch path: one ReserveWorkerSlots per batch of up to ``batch_size``,
        one SubmitTasks and one WatchTasks stream per Worker. It returns one TaskOutcome per task,
        in the input's order; one task's failure never fails the others. Every task keeps run_task's
        rules (a task refused in a batch goes on alone: back-off, retries, resubmission when its
        Worker is lost), and a task id given twice runs once (the second is an idempotent hit).
        ``on_settled`` is called as each task ends; ``on_event`` gets run_task's events with the
        ``task_id``; the callbacks run one at a time, on the client's threads."""
        from .batch import BatchRunner  # batch builds on this module

        if not isinstance(concurrency, int) or concurrency < 1:
            raise BlockxError("INVALID_ARGUMENT", f"concurrency: a whole number of tasks >= 1, not {concurrency!r}")
        if not isinstance(batch_size, int) or not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise BlockxError("INVALID_ARGUMENT", f"batch_size: a whole number from 1 to {MAX_BATCH_SIZE}, not {batch_size!r}")
        if timeout is not None and timeout <= 0:
            raise BlockxError("INVALID_ARGUMENT", f"timeout must be > 0 seconds, not {timeout!r}")
        runner = BatchRunner(self, concurrency=concurrency, batch_size=batch_size, cluster=cluster, timeout=timeout, resubmit=resubmit,
                             max_attempts=max_attempts, on_progress=on_progress, on_event=on_event, on_settled=on_settled)
        return runner.run(list(tasks))

    def _run_from(self, t: w.Task, cl: str, deadline: float, resub: bool, max_attempts: Optional[int], emit: Callable[[ClientEvent], None],
                  events: List[ClientEvent], on_progress: Optional[Callable[[Progress, Snapshot], None]],
                  handle: Optional[TaskHandle] = None, progress: Union[bool, str] = False) -> RunResult:
        """_run_from runs a task to its terminal state under the retry and resubmission rules: a
        fresh run, or from ``handle`` (a task the batch path submitted: followed there first)."""
        attempts_max = max_attempts or self.config.max_attempts
        workers: List[str] = []
        attempt = 1
        wait_ms = 0 if progress or on_progress else SUBMIT_WAIT_MS
        # After a lost Worker the next submission asks for a new run (fencing the lost one off); the
        # newest run generation heard of: the end of an older run is not this task's result.
        resubmitting = False
        newest = [0]
        while True:
            if handle is None:
                handle = self._reserve_and_submit(t, cl, deadline, emit, attempt, wait_ms, resubmitting)
            workers.append(handle.worker_addr)
            superseded = handle.snapshot is not None and _older_run(handle.snapshot, newest)
            if handle._answered is not None and not superseded:
                # The Worker answered at the task's end, with its outputs: nothing to follow.
                return RunResult(t.task_id, cl, state_name(handle._answered.snapshot.state), handle._answered, attempt, workers, events)
            display = ProgressDisplay(t.task_id, "auto" if progress is True else progress) if progress else None
            try:
                outcome = self._consume(self._follow(t.task_id, handle.worker_addr, deadline, emit, newest), display, on_progress)
            except KeyboardInterrupt:
                if display:
                    display.close()
                display = None
                _print_still_running(t.task_id, handle.worker_addr, self.via_proxy)
                raise
            finally:
                if display:
                    display.close()
            kind, value = outcome
            if kind == "terminal":
                return RunResult(t.task_id, cl, state_name(value.snapshot.state), value, attempt, workers, events)
            if kind == "notfound" and handle._uncertain and attempt < attempts_max and _now_ms() < deadline:
                # The uncertain submission never landed there: a plain submission is safe (not a rerun).
                emit({"kind": "submitNotLanded", "attempt": attempt, "worker_addr": handle.worker_addr})
                attempt += 1
                handle = None
                continue
            again = resub and attempt < attempts_max and _now_ms() < deadline
            resubmitting = again
            emit({"kind": "workerLost", "attempt": attempt, "worker_addr": handle.worker_addr, "reason": value, "resubmit": again})
            if not again:
                why = ("not resubmitted (resubmit=False)" if not resub
                       else f"gave up after {attempt} attempts" if attempt >= attempts_max else "the deadline has passed")
                raise BlockxError("WORKER_LOST", f"task {t.task_id}: Worker {handle.worker_addr} was lost ({value}); {why}")
            attempt += 1
            handle = None

    def submit(self, task: Optional[Union[w.Task, Mapping[str, Any]]] = None, *, cluster: Optional[str] = None,
               timeout: Optional[float] = None, on_event: Optional[Callable[[ClientEvent], None]] = None, **kwargs: Any) -> TaskHandle:
        """submit reserves a slot and submits the task under the retry rules; it does not wait."""
        t = self.task(task, **kwargs)
        return self._reserve_and_submit(t, cluster_for(t, cluster), self._deadline(t, timeout), on_event or (lambda e: None), 1)

    def handle(self, task_id: str, worker_addr: str) -> TaskHandle:
        """handle names a task already submitted (e.g. printed after a Ctrl-C)."""
        return TaskHandle(self, task_id, worker_addr)

    def result(self, task_id: str, worker_addr: str) -> RunResult:
        """result asks the Worker for the task's result now (its snapshot while still running)."""
        stub, md = self._transport.worker(worker_addr)
        try:
            r = stub.GetTaskResult(w.GetTaskResultRequest(task_id=task_id), metadata=md, timeout=self.config.rpc_timeout_ms / 1000)
        except grpc.RpcError as e:
            raise to_error(e, f"GetTaskResult {task_id} on {worker_addr}") from None
        return RunResult(task_id, "", state_name(r.snapshot.state), r, 1, [worker_addr], [])

    def cancel(self, task_id: str, worker_addr: str, reason: str = "cancelled by client") -> Snapshot:
        """cancel stops the task; cancelling a finished task returns its final snapshot."""
        stub, md = self._transport.worker(worker_addr)
        try:
            s = stub.CancelTask(w.CancelTaskRequest(task_id=task_id, reason=reason), metadata=md, timeout=self.config.rpc_timeout_ms / 1000)
        except grpc.RpcError as e:
            raise to_error(e, f"CancelTask {task_id} on {worker_addr}") from None
        return Snapshot.of(s)

    # -- Sync Invoker --------------------------------------------------------------------------

    def _invoke_request(self, function: Optional[str], args: Any, source: Optional[str], entry: str, timeout_ms: int) -> spb.InvokeRequest:
        ref = function_ref(function, source, entry)
        try:
            payload = json.dumps(args, allow_nan=False).encode()
        except (TypeError, ValueError) as e:
            raise BlockxError("INVALID_ARGUMENT", f"args is not JSON: {e}") from None
        return spb.InvokeRequest(function=ref, args=payload, timeout_ms=timeout_ms)

    def _invoke_timeout(self, timeout_ms: int) -> float:
        return max(self.config.rpc_timeout_ms, timeout_ms + 5000) / 1000

    def invoke(self, function: Optional[str] = None, args: Any = None, *, source: Optional[str] = None, entry: str = "main",
               timeout_ms: int = 0) -> Any:
        """invoke runs one call now on the Sync Invoker and returns its value, or raises
        CallFailed with the user's traceback (BlockxError when the call could not be made)."""
        req = self._invoke_request(function, args, source, entry, timeout_ms)
        try:
            r = self._transport.syncinvoker().Invoke(req, timeout=self._invoke_timeout(timeout_ms))
        except grpc.RpcError as e:
            raise to_error(e, f"Invoke on the Sync Invoker at {self._si_label()}") from None
        if r.error.code:
            raise CallFailed(r.error.code, r.error.message, r.error.traceback, call_input=req.args.decode(), call_id=r.call_id)
        return json.loads(r.result) if r.result else None

    def debug_invoke(self, function: Optional[str] = None, args: Any = None, *, source: Optional[str] = None,
                     entry: str = "main", timeout_ms: int = 0) -> DebugResult:
        """debug_invoke: invoke plus the call's output, ctx.log lines, IO trace and traceback."""
        req = self._invoke_request(function, args, source, entry, timeout_ms)
        try:
            r = self._transport.syncinvoker().DebugInvoke(req, timeout=self._invoke_timeout(timeout_ms))
        except grpc.RpcError as e:
            raise to_error(e, f"DebugInvoke on the Sync Invoker at {self._si_label()}") from None
        err = CallFailed(r.error.code, r.error.message, r.error.traceback or r.traceback, call_input=req.args.decode(), call_id=r.call_id) if r.error.code else None
        return DebugResult(
            call_id=r.call_id,
            value=json.loads(r.result) if r.result else None,
            error=err,
            stdout=r.stdout + r.stderr,
            logs=[{"time_ms": l.time_ms, "level": l.level, "message": l.message} for l in r.logs],
            io_trace=[{"backend": x.backend, "op": x.op, "duration_ms": x.duration_ms, "cache_hit": x.cache_hit, "bytes": x.bytes, "error": x.error} for x in r.io_trace],
            traceback=r.traceback,
            durations={"queue_ms": r.durations.queue_ms, "cpu_ms": r.durations.cpu_ms, "io_ms": r.durations.io_ms, "total_ms": r.durations.total_ms},
        )

    def precheck(self, function: Optional[str] = None, *, source: Optional[str] = None, entry: str = "main") -> PrecheckResult:
        """precheck compiles and checks a function (syntax, entry, signature) without running it."""
        ref = function_ref(function, source, entry)
        try:
            r = self._transport.syncinvoker().Precheck(spb.PrecheckRequest(function=ref), timeout=self.config.rpc_timeout_ms / 1000)
        except grpc.RpcError as e:
            raise to_error(e, f"Precheck on the Sync Invoker at {self._si_label()}") from None
        return PrecheckResult(r.ok, [Diagnostic(d.severity, d.code, d.message, d.line, d.column) for d in r.diagnostics], r.digest, r.entry)

    def _si_label(self) -> str:
        return f"{self.config.syncinvoker_addr} (via proxy {self.config.proxy_socket_path})" if self.via_proxy else self.config.syncinvoker_addr

    # -- the loop ------------------------------------------------------------------------------

    def _deadline(self, task: w.Task, timeout: Optional[float]) -> float:
        if timeout is not None:
            if timeout <= 0:
                raise BlockxError("INVALID_ARGUMENT", f"timeout must be > 0 seconds, not {timeout!r}")
            return _now_ms() + timeout * 1000
        return _now_ms() + (task.task_timeout_ms or DEFAULT_TASK_TIMEOUT_MS) + RUN_MARGIN_MS

    def _rpc_timeout(self, deadline: float) -> float:
        return max(0.001, min(self.config.rpc_timeout_ms, deadline - _now_ms()) / 1000)

    def _reserve_and_submit(self, task: w.Task, cluster: str, deadline: float, emit: Callable[[ClientEvent], None], attempt: int,
                            wait_ms: int = 0, resubmit: bool = False) -> TaskHandle:
        """_reserve_and_submit loops reserve -> submit under the retry rules. With ``wait_ms``,
        SubmitTask waits that long for the task's end (the handle then carries the result). A
        SubmitTask that fails once it may have reached the Worker, waiting or not, is taken as
        submitted there, uncertainly (the task may be running there: following it applies the
        lost-Worker rules, where reserving afresh could run it twice). A refusal naming the Worker
        whose run of the task id is current (TASK_RUN_ELSEWHERE) hands back a handle on that
        Worker. ``resubmit``: ask for a new run, fencing off the earlier ones."""
        reservers = self._transport.reservers(cluster)
        policy = ReservePolicy(RetryPolicyConfig(slot_ttl_ms=self.config.slot_ttl_ms), len(reservers))
        index = 0
        last_capacity = ""

        def retry(failure: str, where: str, details: str) -> None:
            nonlocal index, last_capacity
            d = policy.decide(failure, _now_ms(), deadline, self._rand())
            last = f"{failure} from {where}: {details}"
            if failure != "UNAVAILABLE":
                last_capacity = last
            if isinstance(d, GiveUp):
                what = "no free slot" if d.code == "NO_CAPACITY" else "the cluster did not answer"
                why = f"; last capacity refusal: {last_capacity}" if d.code == "NO_CAPACITY" and last_capacity != last else ""
                raise BlockxError(d.code, f"task {task.task_id} ({cluster} cluster): {what} before the deadline; last answer: {last}{why}", failure)
            emit({"kind": "reserveRefused", "failure": failure, "coordinator": where, "details": details, "delay_ms": round(d.delay_ms)})
            if d.next_coordinator:
                index += 1
            time.sleep(d.delay_ms / 1000)

        while True:
            label, stub = reservers[index % len(reservers)]
            try:
                slot = stub.ReserveWorkerSlot(cpb.ReserveWorkerSlotRequest(task_id=task.task_id), timeout=self._rpc_timeout(deadline))
            except grpc.RpcError as e:
                failure = _retryable(e)
                if failure is None:
                    raise to_error(e, f"ReserveWorkerSlot on {label}") from None
                retry(failure, label, _details(e))
                continue
            policy.succeeded()
            wstub, md = self._transport.worker(slot.worker_addr)
            emit({"kind": "submitting", "attempt": attempt, "worker_addr": slot.worker_addr, "slot_id": slot.slot_id, "coordinator": label})
            try:
                snap = wstub.SubmitTask(w.SubmitTaskRequest(task=task, slot_id=slot.slot_id, wait_ms=wait_ms, resubmit=resubmit), metadata=md,
                                        timeout=self._rpc_timeout(deadline))
            except grpc.RpcError as e:
                if _submit_may_have_landed(e):
                    emit({"kind": "submitUncertain", "attempt": attempt, "worker_addr": slot.worker_addr, "code": _status(e), "details": _details(e)})
                    unknown = w.TaskSnapshot(task_id=task.task_id, slot_id=slot.slot_id, worker_addr=slot.worker_addr)
                    h = TaskHandle(self, task.task_id, slot.worker_addr, slot.slot_id, cluster, label, Snapshot.of(unknown))
                    h._uncertain = True
                    return h
                elsewhere = parse_run_elsewhere(_details(e)) if e.code() == grpc.StatusCode.ALREADY_EXISTS else None  # type: ignore[attr-defined]
                if elsewhere is not None:
                    emit({"kind": "attached", "attempt": attempt, "refused_by": slot.worker_addr, "running_on": elsewhere.worker_addr, "state": elsewhere.state})
                    unknown = w.TaskSnapshot(task_id=task.task_id, slot_id=slot.slot_id, worker_addr=elsewhere.worker_addr)
                    return TaskHandle(self, task.task_id, elsewhere.worker_addr, slot.slot_id, cluster, label, Snapshot.of(unknown))
                emit({"kind": "submitRefused", "code": _status(e), "worker_addr": slot.worker_addr, "details": _details(e)})
                # The slot expired, or belonged to an earlier incarnation of the Worker: reserve a fresh one.
                if e.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION):  # type: ignore[attr-defined]
                    retry("UNAVAILABLE", slot.worker_addr, _details(e))
                    continue
                failure = _retryable(e)
                if failure is None:
                    raise to_error(e, f"SubmitTask {task.task_id} on {slot.worker_addr}") from None
                retry(failure, slot.worker_addr, _details(e))
                continue
            emit({"kind": "submitted", "attempt": attempt, "worker_addr": slot.worker_addr, "slot_id": slot.slot_id, "coordinator": label,
                  "state": state_name(snap.state)})
            handle = TaskHandle(self, task.task_id, slot.worker_addr, slot.slot_id, cluster, label, Snapshot.of(snap))
            if state_name(snap.state) in TERMINAL_STATES and snap.HasField("outputs"):
                handle._answered = _result_of(snap)
            return handle

    def _wait(self, task_id: str, worker_addr: str, deadline: float, progress: Union[bool, str], cluster: str) -> RunResult:
        display = ProgressDisplay(task_id, "auto" if progress is True else progress) if progress else None
        try:
            kind, value = self._consume(self._follow(task_id, worker_addr, deadline, lambda e: None), display, None)
        finally:
            if display:
                display.close()
        if kind in ("lost", "notfound"):
            raise BlockxError("WORKER_LOST", f"task {task_id}: Worker {worker_addr} was lost ({value})")
        return RunResult(task_id, cluster, state_name(value.snapshot.state), value, 1, [worker_addr], [])

    def _consume(self, follow: Iterator[Tuple[str, Any]], display: Optional[ProgressDisplay],
                 on_progress: Optional[Callable[[Progress, Snapshot], None]]) -> Tuple[str, Any]:
        meter = ProgressMeter()
        for kind, value in follow:
            if kind != "snapshot":
                return kind, value
            p = meter.update(value.calls_total, value.calls_succeeded, value.calls_failed, _now_ms())
            snap = Snapshot.of(value)
            if display:
                display.update(p, snap.state)
            if on_progress:
                on_progress(p, snap)
        raise AssertionError("follow ended without an outcome")

    def _follow(self, task_id: str, worker_addr: str, deadline: float, emit: Callable[[ClientEvent], None],
                newest: Optional[List[int]] = None) -> Iterator[Tuple[str, Any]]:
        """_follow yields ("snapshot", TaskSnapshot) items, then ("terminal", TaskResult), ("lost",
        reason) or ("notfound", reason). It streams WatchTasks, falling back to GetTaskResult
        polling when the stream breaks; the Worker counts as lost when it stays unreachable for
        worker_lost_after_ms, or answers NotFound (it restarted and forgot the task, or the
        submission never landed there). ``newest``: the newest run generation heard of; the end
        of an older run is not the task's result (that run was superseded): lost."""
        newest = newest if newest is not None else [0]
        stub, md = self._transport.worker(worker_addr)
        lost_after = self.config.worker_lost_after_ms
        streaming = True
        unreachable_since: Optional[float] = None
        while True:
            if _now_ms() >= deadline:
                raise BlockxError("DEADLINE_EXCEEDED", f"task {task_id} on {worker_addr} was still running at the caller's deadline")
            terminal_seen = False
            streamed: Optional[w.TaskResult] = None
            if streaming and unreachable_since is None:
                outcome: Dict[str, Any] = {}
                for s in self._stream(stub, md, [task_id], deadline, outcome):
                    if s.state in (w.SUCCEEDED, w.FAILED, w.TIMED_OUT, w.CANCELLED):
                        terminal_seen = True
                        if streamed is None and s.HasField("outputs"):
                            streamed = _result_of(s)
                    yield "snapshot", s
                # The terminal snapshot carried the outputs (a Worker that knows with_results): no GetTaskResult.
                if streamed is not None:
                    if _older_run(streamed.snapshot, newest):
                        yield "lost", f"{worker_addr} ended run {streamed.snapshot.run_generation} of the task, which a newer run ({newest[0]}) had replaced"
                    else:
                        yield "terminal", streamed
                    return
                err = outcome.get("err")
                if err is not None:
                    emit({"kind": "watchFailed", "worker_addr": worker_addr, "code": _status(err), "details": _details(err)})
                    if isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.UNIMPLEMENTED:  # type: ignore[attr-defined]
                        streaming = False
                silent = outcome.get("silent_since")
                if silent is not None and _now_ms() - silent >= lost_after:
                    yield "lost", f"no answer for {int(_now_ms() - silent)} ms (hung?): {_details(err) if err else ''}"
                    return
            try:
                r = stub.GetTaskResult(w.GetTaskResultRequest(task_id=task_id), metadata=md, timeout=self._rpc_timeout(deadline))
                unreachable_since = None
                if r.snapshot.state in (w.SUCCEEDED, w.FAILED, w.TIMED_OUT, w.CANCELLED):
                    if not terminal_seen:
                        yield "snapshot", r.snapshot
                    if _older_run(r.snapshot, newest):
                        yield "lost", f"{worker_addr} ended run {r.snapshot.run_generation} of the task, which a newer run ({newest[0]}) had replaced"
                    else:
                        yield "terminal", r
                    return
                if r.HasField("snapshot"):
                    yield "snapshot", r.snapshot
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.NOT_FOUND:  # type: ignore[attr-defined]
                    yield "notfound", f"the Worker no longer knows the task: {e.details()}"  # type: ignore[attr-defined]
                    return
                if _retryable(e) is None:
                    raise to_error(e, f"GetTaskResult {task_id} on {worker_addr}") from None
                if unreachable_since is None:
                    unreachable_since = _now_ms()
                if _now_ms() - unreachable_since >= lost_after:
                    yield "lost", f"unreachable for {lost_after} ms: {_details(e)}"
                    return
            time.sleep(POLL_INTERVAL_S if unreachable_since is None else POLL_INTERVAL_S / 2)

    def _stream(self, stub: wg.WorkerServiceStub, md: Any, task_ids: List[str], deadline: float, outcome: Dict[str, Any],
                terminal_only: bool = False) -> Iterator[w.TaskSnapshot]:
        """_stream runs one WatchTasks call over ``task_ids``, yielding its snapshots; its error (if
        any) lands in ``outcome``. A hung Worker keeps its connection open and says nothing, so a
        stream quiet for STREAM_QUIET_S is probed with GetTaskResult of a task not yet seen
        terminal; a probe unanswered within worker_lost_after_ms ends the stream with
        ``silent_since`` (ms) for the caller to judge, and one that finds that task terminal ends it
        too (the caller reads the results). ``terminal_only``: only each task's end is sent (the
        batch path without progress). The stream is read by a thread into a queue, so the caller's
        thread stays interruptible."""
        call = stub.WatchTasks(w.WatchTasksRequest(task_ids=task_ids, with_results=True, terminal_only=terminal_only), metadata=md,
                               timeout=max(0.001, (deadline - _now_ms()) / 1000))
        open_ids = dict.fromkeys(task_ids)  # in order: the probe asks about the first task not seen ending
        q: "queue.Queue[Tuple[str, Any]]" = queue.Queue()

        def pump() -> None:
            try:
                for s in call:
                    q.put(("snapshot", s))
                q.put(("end", None))
            except grpc.RpcError as e:
                q.put(("err", e))
            except Exception as e:  # noqa: BLE001 - handed to the caller
                q.put(("err", e))

        threading.Thread(target=pump, name=f"blockx-watch-{task_ids[0]}", daemon=True).start()
        heard = time.monotonic()
        try:
            while True:
                try:
                    kind, value = q.get(timeout=STREAM_QUIET_S / 4)
                except queue.Empty:
                    if time.monotonic() - heard < STREAM_QUIET_S:
                        continue
                    if not open_ids:
                        return
                    sent = _now_ms()
                    try:
                        r = stub.GetTaskResult(w.GetTaskResultRequest(task_id=next(iter(open_ids))), metadata=md,
                                               timeout=max(0.001, min(deadline - sent, self.config.worker_lost_after_ms) / 1000))
                    except grpc.RpcError as e:
                        outcome["err"] = e
                        if _retryable(e):
                            outcome["silent_since"] = sent
                        return
                    heard = time.monotonic()
                    if r.snapshot.state in (w.SUCCEEDED, w.FAILED, w.TIMED_OUT, w.CANCELLED):
                        return  # a terminal state the stream missed: the caller reads the result
                    continue
                if kind == "snapshot":
                    heard = time.monotonic()
                    if value.state in (w.SUCCEEDED, w.FAILED, w.TIMED_OUT, w.CANCELLED):
                        open_ids.pop(value.task_id, None)
                    yield value
                elif kind == "end":
                    return
                else:
                    outcome["err"] = value
                    return
        finally:
            call.cancel()


def _print_still_running(task_id: str, worker_addr: str, via_proxy: bool) -> None:
    sys.stderr.write(
        f"\nblockx: interrupted; task {task_id} is still running on Worker {worker_addr}.\n"
        f"  follow it: blockx watch {task_id} --worker {worker_addr}\n"
        f"  cancel it: blockx cancel {task_id} --worker {worker_addr}\n"
        f"  in Python: Client.from_env().handle({task_id!r}, {worker_addr!r}).wait()  (or .cancel())\n")
    sys.stderr.flush()
