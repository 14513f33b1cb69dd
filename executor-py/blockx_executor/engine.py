"""Engine: runs calls for the pool over one socket connection.

Threads and the baton (leader/followers)
----------------------------------------
Whichever thread holds the *baton* is the loop: it reads frames, answers Pings and runs every
step inline, with no thread hop: a call's first step (compile, module body, the entry) and
every step of an ``async def`` coroutine. A trivial call therefore costs one pass through the
loop. The baton moves when the loop thread cannot go on reading frames:
- a ``def`` call suspends (``ctx.io`` ...): its thread sends CallWaiting and reads the next
  frame itself; when that is the call's own ResumeCall (the call is alone on its executor), the
  call goes on with no thread switch at all. Any other frame is put back, and the thread hands
  the baton to an idle thread (or a new one) and blocks until ResumeCall;
- ResumeCall for a parked ``def`` call hands the baton *to that call's thread*: it finishes
  the call inline and goes on reading frames, while the previous loop thread goes idle. So
  normally one thread runs user code at a time and a resume costs one clean thread switch, not
  a crowd of woken threads fighting for the GIL;
- a step has run for HANDOFF_AFTER_S on the loop thread (CPU-bound code, a sleep, a slow C
  call): the monitor hands the baton over, and the step finishes on its thread undisturbed.
A thread that lost the baton finishes what it was doing and goes idle; idle threads exit after
IDLE_THREAD_TTL_S. A call never starts twice (no re-execution, no repeated side effects), the
socket is always read, and threads exist only for ``def`` calls that are parked or slow.

Ownership is a token list per baton holder: the holder appends a token before each frame and
pops it afterwards; whoever takes the baton away (the holder itself, or the monitor) pops it
first. ``list.pop`` is atomic, so exactly one side wins.

Steps, budgets and interrupts
-----------------------------
A step is one uninterrupted stretch of a call's user code on one thread (``_run_step``). Its
CPU time comes from the thread's CPU clock, read at most once per CPU_BASE_TTL_S of wall time:
a clock read is a system call (1.5 us here; two per step were 7 of a tiny call's 15 us in the
engine). A step starts from the thread's last reading (its ``base``, at most CPU_BASE_TTL_S old,
read anew when older); one that ends within CPU_BASE_TTL_S is charged its wall time, which a
thread's CPU time never exceeds; a longer one the clock's delta from the base, or its wall time
if less. Either way a step is charged at most CPU_BASE_TTL_S more than the CPU it used, and a
process stopped mid-step (SIGSTOP) is never charged the stop. The monitor thread ticks every
TICK_S while steps run; it reads each running step's thread CPU clock and, when ``cpu + ioMs``
is over the budget, sends the call's CallFailed BUDGET_EXCEEDED at once and raises
BudgetExceeded in the step's thread (PyThreadState_SetAsyncExc). Cancelled is delivered the
same way. An async exception is only ever raised while holding the thread's lock and only while that exact
step runs; the step's end clears any still-pending one under the same lock, so none can leak
into the loop or into another call.

Frames
------
All frames go through one write lock. The baton holder queues frames and sends them in one
``sendall`` before it blocks in ``recv``, and also before it hands the baton to another thread
(a ``def`` call suspending or resumed): a thread wake-up takes 0.2-0.5 ms here, and frames left
for the next holder waited that long, plus the resumed call's whole step (measured in
bench/io/io-bound.ts: 0.55 ms per CallWaiting, 1.4 ms per CallCompleted). Every other thread
sends at once.
"""

import ctypes
import socket
import hashlib
import json
import json.scanner
import os
import re
import threading
import time
import traceback

from . import compile_cache as cc
from .call import Call
from .chain_api import default_chain
from .capture import tls, warn
from .context import AsyncContext, Suspension, SyncContext
from .errors import BackendError, BudgetExceeded, Cancelled, Interrupt
from .framing import MAX_FRAME_BYTES, FrameReader, ProtocolError, encode_json, frame_bytes
from .hot_spin import HotSpinPolicy
from .user_traceback import describe_compile_error, describe_user_exception, user_filename

TICK_S = 0.005
HANDOFF_AFTER_S = 0.010
MONITOR_IDLE_TICKS = 200
ZOMBIE_CPU_LIMIT_S = 5.0
IDLE_THREAD_TTL_S = 30.0
MIN_IDLE_THREADS = 4
THREAD_STACK_BYTES = 2 << 20
DEFAULT_BUDGET_MS = 5000.0
MAX_HOT_SPIN_S = 0.005
CPU_BASE_TTL_S = 0.0005  # see "Steps, budgets and interrupts": what a step may be over-charged

_thread_time = time.thread_time
_monotonic = time.monotonic
_clock_gettime = time.clock_gettime
_allocate_lock = threading.Lock
_MSG_DONTWAIT = socket.MSG_DONTWAIT
_sched_yield = os.sched_yield
_dumps = encode_json
_dumps_str = json.encoder.encode_basestring_ascii  # what _dumps gives a str, without its Python frame
_int_repr = int.__repr__
_decode = json.JSONDecoder().decode
_scan = json.scanner.make_scanner(json.JSONDecoder())


def _loads(raw) -> object:
    """_loads parses a frame's UTF-8 JSON (as json.loads does); a frame with nothing around its
    value, which is every frame the pool sends, skips json.loads' encoding detection and
    whitespace matching (an ExecuteCall frame: 2.3 us with json.loads, 1.0 us this way)."""
    text = raw.decode("utf-8", "surrogatepass")
    try:
        value, end = _scan(text, 0)
        if end == len(text):
            return value
    except (StopIteration, ValueError):
        pass
    return _decode(text)  # raises the precise error, or reads a frame with whitespace around

# Resolved now, before the audit hook denies ctypes.dlsym.
_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
_c_ulong = ctypes.c_ulong
_py_object = ctypes.py_object

# The start of every frame the pool sends for a call: its type, then its callId (PROTOCOL.md).
_FRAME_HEAD = re.compile(rb'\{\s*"type"\s*:\s*"(ExecuteCall|ResumeCall)"\s*,\s*"callId"\s*:\s*("(?:[^"\\]|\\.){1,2048}")')
_FRAME_HEAD_BYTES = 8192

_CANCEL = object()  # ResumeCall replacement that makes a parked def call unwind


class _NotJson(Exception):
    """_NotJson wraps the reason a result could not be encoded (raised inside the step)."""


def _encode_result(value) -> str:
    try:
        # The commonest results spelled as the encoder spells them, without its Python frames.
        t = type(value)
        if t is int:
            return _int_repr(value)
        if t is str:
            return _dumps_str(value)
        return _dumps(value)
    except Exception as e:
        raise _NotJson(f"{type(e).__name__}: {e}") from None


def _invoke_sync(fn, ctx, args) -> str:
    # The result is encoded inside the step: a dict subclass's items() is user code too,
    # and encoding a huge result is CPU the call should pay for.
    return _encode_result(fn(ctx, args))


def _split_output(call: Call) -> dict:
    """_split_output: stdout and stderr apart, only when the call wrote to stderr."""
    split = call.split_output()
    return {} if split is None else {"stdout": split[0], "stderr": split[1]}


def _split_output_json(call: Call) -> str:
    split = call.split_output()
    return "" if split is None else ',"stdout":' + _dumps(split[0]) + ',"stderr":' + _dumps(split[1])


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


class _Worker:
    """_Worker is the engine's state of one of its threads. ``step`` is
    ``(call, cpu_base, wall_at_start)`` while a step runs, else None (``cpu_base`` is the
    thread's CPU clock as read at ``base_at``, at most CPU_BASE_TTL_S before the step began);
    ``lock`` orders the step's end against the monitor's async exceptions; ``wake`` is locked while the thread
    is idle and released to hand it the baton; ``baton`` is its current token list."""

    __slots__ = ("ident", "cident", "clock", "lock", "step", "fired", "wake", "baton", "main", "cpu_base", "base_at")

    def __init__(self, idle: bool, main: bool = False) -> None:
        self.ident = 0
        self.cident = None
        self.clock = None
        self.lock = _allocate_lock()
        self.step = None
        self.fired = False
        self.wake = _allocate_lock()
        if idle:
            self.wake.acquire()
        self.baton = []
        self.main = main
        self.cpu_base = 0.0
        self.base_at = -1e9  # read the clock at the first step

    def attach(self) -> None:
        self.ident = threading.get_ident()
        self.cident = _c_ulong(self.ident)
        self.clock = time.pthread_getcpuclockid(self.ident)
        tls.worker = self


class Engine:
    """Engine serves one pool connection until it closes (then the process exits 0)."""

    def __init__(self, sock, executor_id: str, hot_spin_s: float = 0.0) -> None:
        self._sock = sock
        # Before blocking in recv, poll the socket for this long: a request arriving meanwhile is
        # read by a running thread instead of one the kernel must wake (25 vs 165 us measured).
        self._hot_spin_s = max(0.0, min(hot_spin_s, MAX_HOT_SPIN_S))
        self._spin_policy = HotSpinPolicy(self._hot_spin_s)
        self._last_wait_s = 0.0  # how long the loop last waited for a frame
        # The last ExecuteCall said it was the pool's only call ("lone"): a caller is waiting on
        # this one answer and the next request comes after it. With more in flight the pool's
        # cores are busy and a spin would take the CPU the next request comes through.
        self._last_call_lone = False
        self._reader = FrameReader()
        self._wlock = _allocate_lock()
        self._pending = []
        self._calls = {}
        self._cache = cc.CompileCache()
        self._sources = cc.SourceStore()
        self._idle = []
        self._active = set()
        self._owner = None
        self._steps = 0
        self._mon_sleeping = False
        self._mon_event = threading.Event()
        self._spawn_retry_at = 0.0  # after a failed thread start, retry standbys from then
        self._spawn_warned_at = -1e9
        self._zombies = {}  # monitor only: zombie step -> its thread's CPU clock when first seen
        try:
            threading.stack_size(THREAD_STACK_BYTES)
        except (ValueError, RuntimeError) as e:
            warn(f"cannot set the thread stack size: {e}")

    # --- lifecycle ------------------------------------------------------------------------

    def run(self) -> None:
        """run serves on the calling (main) thread; it never returns."""
        w = _Worker(idle=False, main=True)
        w.attach()
        self._owner = w
        self._active.add(w)
        try:
            threading.Thread(target=self._monitor, name="blockx-monitor", daemon=True).start()
        except RuntimeError as e:
            warn(f"cannot start the monitor thread, budgets are not enforced mid-step: {e}")
        self._thread_main(w)

    def _closed(self, why: str, code: int = 0) -> None:
        """_closed ends the process at once (threads may be blocked in user code): 0 when
        the pool closed the connection, 2 on a protocol error."""
        if why:
            warn(why)
        os._exit(code)

    def _thread_main(self, w: _Worker) -> None:
        if not w.ident:
            w.attach()
        while True:
            # Idle threads linger for IDLE_THREAD_TTL_S: bursts of suspensions and resumes
            # would otherwise create and destroy threads all the time (measured: 3-4x slower).
            while not w.wake.acquire(timeout=-1 if w.main else IDLE_THREAD_TTL_S):
                if len(self._idle) > MIN_IDLE_THREADS:
                    try:
                        self._idle.remove(w)
                    except ValueError:
                        continue  # handed the baton meanwhile: the next acquire succeeds
                    return
            try:
                self._serve(w)
            except BaseException:
                warn("the frame loop failed; exiting:\n" + traceback.format_exc())
                os._exit(70)
            self._active.discard(w)
            self._idle.append(w)

    def _spawn(self, idle: bool) -> _Worker:
        """_spawn starts a thread: idle (parked until handed the baton) or holding it."""
        w = _Worker(idle=idle)
        t = threading.Thread(target=self._thread_main, args=(w,), name="blockx-worker", daemon=True)
        t.start()  # RuntimeError when RLIMIT_NPROC or memory says no
        return w

    def _reserve(self) -> _Worker:
        """_reserve takes an idle thread, or starts one (RuntimeError if none can start)."""
        try:
            return self._idle.pop()
        except IndexError:
            return self._spawn(idle=True)

    def _activate(self, nw: _Worker) -> None:
        """_activate hands the baton to a reserved thread; the caller has popped its token."""
        nw.baton = []
        self._owner = nw
        self._active.add(nw)
        nw.wake.release()

    # --- the frame loop -------------------------------------------------------------------

    def _serve(self, w: _Worker) -> None:
        """_serve reads and dispatches frames while ``w`` holds the baton."""
        next_frame = self._next_frame
        dispatch = self._dispatch
        while True:
            raw = next_frame()
            w.baton.append(1)
            try:
                dispatch(w, raw)
            except Interrupt as e:
                warn(f"ignored a stray {type(e).__name__} outside any step")
            except Exception:
                warn("dispatch failed:\n" + traceback.format_exc())
            # Re-read: a thread that suspended in this frame and was resumed holds a new baton.
            # Losing the baton needs no flush: the new holder flushes before it blocks in recv
            # (see _finish for why nothing can be left behind).
            try:
                w.baton.pop()
            except IndexError:
                return

    def _next_frame(self):
        """_next_frame returns the pool's next whole frame, reading (and blocking) as needed."""
        reader = self._reader
        while True:
            try:
                raw = reader.next_frame()
            except ProtocolError as e:
                self._closed(f"protocol error from the pool: {e}", 2)
            if raw is not None:
                return raw
            self._receive()

    def _receive(self) -> None:
        """_receive sends what is queued, then blocks until more of the pool's bytes are in the
        reader. Only the baton holder reads."""
        reader = self._reader
        sock = self._sock
        if self._pending:
            with self._wlock:
                self._flush_locked()
        if not self._idle:
            self._spawn_standby()
        idle_at = _monotonic()
        try:
            # Spin only after a lone call (see _last_call_lone), and when the last wait was short
            # enough for a spin to have caught its frame: requests arriving further apart would
            # pay the spin's CPU for nothing. Even then, the policy spins only while spun waits have
            # lately been clearly shorter than slept ones (hot_spin.py): a spin holds a core the
            # request may need.
            eligible = self._last_call_lone and self._last_wait_s <= self._hot_spin_s and self._hot_spin_s > 0.0 and len(self._active) <= 1
            spin = eligible and self._spin_policy.choose()
            n = self._spin_recv(sock, reader) if spin else None
            if n is None:
                n = sock.recv_into(reader.space())
        except OSError as e:
            self._closed(f"pool connection failed: {e}")
        self._last_wait_s = _monotonic() - idle_at
        if eligible:
            self._spin_policy.observe(spin, self._last_wait_s)
        if not n:
            self._closed("")
        reader.advance(n)

    def _resume_inline(self, w: _Worker, call: Call) -> bool:
        """_resume_inline lets the holder of the baton, suspended in a def call, read the next
        frame itself: when it is the call's own ResumeCall (a call alone on its executor: the
        Sync Invoker's, a serial task's), it is dispatched here and the call goes on without a
        thread switch (the hand-off and the resume cost two). Returns True once the call has its
        answer (this thread still holds the baton), or False with the frame put back for anything
        else, which the successor reads."""
        raw = self._next_frame()
        m = _FRAME_HEAD.match(raw, 0, _FRAME_HEAD_BYTES)
        try:
            own = m is not None and m.group(1) == b"ResumeCall" and _loads(m.group(2)) == call.id
        except (ValueError, RecursionError):
            own = False
        if not own:
            self._reader.unread()
            return False
        w.baton.append(1)  # as _serve does for a frame; _resume hands it back to this thread
        try:
            self._dispatch(w, raw)
        except Exception:
            warn("dispatch failed:\n" + traceback.format_exc())
        if call.slot.locked():  # not answered (cannot happen): end it rather than park it unread
            self._fail(call, "INTERNAL", "the executor read the call's ResumeCall but did not resume it")
            self._abort_parked(w, call)
        return True

    def _spin_recv(self, sock, reader):
        """_spin_recv polls the socket without blocking for up to the hot spin; None if nothing
        came (then the caller blocks). Only while no other thread runs a step: it holds the GIL.
        Between polls it yields the core: on a machine with fewer cores than busy processes (2 here:
        the client, the invoker and the executor), a spin that did not yield took the core the
        request had to come through (the invoker's p50 605 us spinning, 427 us not; 447 yielding)."""
        deadline = _monotonic() + self._hot_spin_s
        space = reader.space()
        while True:
            try:
                return sock.recv_into(space, 0, _MSG_DONTWAIT)
            except BlockingIOError:
                if _monotonic() >= deadline:
                    return None
                _sched_yield()

    def _spawn_standby(self) -> None:
        """_spawn_standby keeps one idle thread ready, so that the next suspension hands the
        baton over without starting a thread on the way."""
        now = _monotonic()
        if now < self._spawn_retry_at:
            return
        try:
            self._idle.append(self._spawn(idle=True))
        except RuntimeError as e:
            self._spawn_retry_at = now + 1.0
            self._warn_spawn(f"cannot start a standby thread: {e}")

    def _warn_spawn(self, message: str) -> None:
        now = _monotonic()
        if now - self._spawn_warned_at >= 10.0:
            self._spawn_warned_at = now
            warn(message + " (RLIMIT_NPROC counts threads; def calls that suspend need one thread each)")

    def _dispatch(self, w: _Worker, raw) -> None:
        try:
            msg = _loads(raw)
        except (ValueError, RecursionError, MemoryError) as e:
            # RecursionError: a value nested deeper than Python's JSON reader goes (an IO answer,
            # an input the pool let through). The call it belongs to gets the error, not silence.
            self._undecodable(w, raw, e)
            return
        if type(msg) is not dict:
            warn("ignored a frame that is not a JSON object")
            return
        kind = msg.get("type")
        if kind == "ExecuteCall":
            self._execute(w, msg)
        elif kind == "ResumeCall":
            self._resume(w, msg)
        elif kind == "Ping":
            data = frame_bytes(_dumps({"type": "Pong", "seq": msg.get("seq")}))
            with self._wlock:
                self._pending.append(data)
        elif kind == "CancelCall":
            self._cancel(w, msg)
        else:
            warn(f"ignored a frame of unknown type {kind!r}")

    def _undecodable(self, w: _Worker, raw, exc: BaseException) -> None:
        """_undecodable answers a frame that does not decode as the error of the call it names
        (the pool writes ``type`` and ``callId`` first): an ExecuteCall fails at once, a
        ResumeCall fails its suspended call. Anything else is ignored with a warning."""
        cause = f"{type(exc).__name__}: {exc}"
        m = _FRAME_HEAD.match(bytes(raw[:_FRAME_HEAD_BYTES]))
        call_id = None
        if m is not None:
            try:
                call_id = _loads(m.group(2))
            except ValueError:
                call_id = None
        if not isinstance(call_id, str) or not call_id:
            warn(f"ignored a frame that does not decode: {cause}")
            return
        if m.group(1) == b"ExecuteCall":
            if call_id in self._calls:
                warn(f"ignored an undecodable ExecuteCall for call {call_id}, which is already running")
                return
            call = Call(call_id, DEFAULT_BUDGET_MS)
            self._calls[call_id] = call
            self._fail(call, "INPUT_REJECTED", f"the executor could not decode the call's frame (its input, {len(raw)} bytes): {cause}")
            return
        call = self._calls.get(call_id)
        if call is None or call.waiting is None:
            warn(f"ignored an undecodable ResumeCall for call {call_id}, which is not waiting: {cause}")
            return
        call.waiting = None
        self._fail(call, "INPUT_REJECTED", f"the executor could not decode the answers to the call's requests ({len(raw)} bytes): {cause}")
        self._abort_parked(w, call)

    # --- sending --------------------------------------------------------------------------

    def _flush_locked(self) -> None:
        pending = self._pending
        if not pending:
            return
        data = pending[0] if len(pending) == 1 else b"".join(pending)
        pending.clear()
        try:
            self._sock.sendall(data)
        except OSError as e:
            self._closed(f"pool connection failed while sending: {e}")

    def _finish(self, call: Call, data: bytes) -> bool:
        """_finish queues a call's final frame unless the call already has one; it returns
        whether this one was the final frame. Threads that do not hold the baton send now.
        The only thread that takes a baton from another is the monitor, and it does so under
        the write lock: so a frame queued here by a holder is always queued before the next
        holder starts, and that one flushes before it blocks in recv."""
        w = getattr(tls, "worker", None)
        with self._wlock:
            if call.finished:
                return False
            call.finished = True
            if self._calls.get(call.id) is call:
                del self._calls[call.id]
            self._pending.append(data)
            if w is None or not w.baton:
                self._flush_locked()
        return True

    def _complete(self, call: Call, result_json: str) -> bool:
        if (call.cpu * 1000.0 + call.io_ms) > call.budget_ms:
            return self._fail_budget(call, call.cpu)
        body = (
            '{"type":"CallCompleted","callId":'
            + _dumps_str(call.id)
            + ',"result":'
            + result_json
            + ',"cpuMs":'
            + repr(_ms(call.cpu))
            + (',"output":' + _dumps(call.output()) + _split_output_json(call) if call.out else ',"output":""')
            + ',"logs":'
            + (_dumps(call.logs) if call.logs else "[]")
            + (',"compiled":true' if call.compiled else ',"compiled":false')
            + (',"prefetchUsed":true}' if call.prefetch_used else "}")
        )
        if len(body) > MAX_FRAME_BYTES - (2 << 20):
            return self._fail(call, "RESULT_NOT_JSON", f"the result is too large to send: {len(result_json)} bytes of JSON (the frame limit is 64 MiB)")
        return self._finish(call, frame_bytes(body))

    def _fail(self, call: Call, code: str, message: str, traceback_text: str = "", line: int = 0, column: int = 0, cpu: float = -1.0) -> bool:
        error = {"code": code, "message": message, "traceback": traceback_text, "line": line, "column": column}
        return self._fail_error(call, error, cpu)

    def _fail_error(self, call: Call, error: dict, cpu: float = -1.0) -> bool:
        frame = {
            "type": "CallFailed",
            "callId": call.id,
            "error": error,
            "cpuMs": _ms(call.cpu if cpu < 0 else cpu),
            "output": call.output(),
            **_split_output(call),
            "logs": call.logs,
            "compiled": call.compiled,
        }
        if call.prefetch_used:
            frame["prefetchUsed"] = True
        return self._finish(call, frame_bytes(_dumps(frame)))

    def _fail_budget(self, call: Call, cpu: float) -> bool:
        cpu_ms = cpu * 1000.0
        message = f"call exceeded its budget of {call.budget_ms:.0f} ms (cpu {cpu_ms:.0f} ms + io {call.io_ms:.0f} ms)"
        return self._fail(call, "BUDGET_EXCEEDED", message, cpu=cpu)

    def _fail_exception(self, w: _Worker, call: Call, exc: BaseException) -> bool:
        if isinstance(exc, _NotJson):
            return self._fail(call, "RESULT_NOT_JSON", f"the result is not JSON-serialisable: {exc}")
        if isinstance(exc, BudgetExceeded):
            return self._fail_budget(call, call.cpu)
        if isinstance(exc, Cancelled):
            return self._fail(call, "CANCELLED", "call cancelled")
        # Formatting calls str() on the user's exception: user code, so it runs as a step.
        ok, error = self._run_step(w, call, describe_user_exception, exc)
        if call.finished:
            return False
        if not ok:
            error = {"code": "USER_ERROR", "message": type(exc).__name__, "traceback": "", "line": 0, "column": 0}
        # The backend was down or overloaded: the same call may succeed later, so the pool retries it.
        if type(exc) is BackendError and exc.retryable is True:
            error["code"] = "BACKEND_RETRYABLE"
        return self._fail_error(call, error)

    def _settle(self, w: _Worker, call: Call, ok: bool, value) -> None:
        """_settle answers a call whose last step returned (``value`` is the encoded result)
        or raised; a call that already has its final frame is left alone."""
        if call.finished:
            return
        if ok:
            self._complete(call, value)
        else:
            self._fail_exception(w, call, value)

    # --- steps ----------------------------------------------------------------------------

    def _begin_step(self, w: _Worker, call: Call) -> None:
        tls.call = call
        now = _monotonic()
        if now - w.base_at >= CPU_BASE_TTL_S:
            w.base_at = now
            w.cpu_base = _thread_time()
        w.step = (call, w.cpu_base, now)
        self._steps += 1
        if self._mon_sleeping:
            self._mon_event.set()

    def _end_step(self, w: _Worker) -> None:
        tls.call = None
        now = _monotonic()
        with w.lock:
            st = w.step
            if st is None:
                return
            if w.fired:
                # Clear an interrupt that has not landed yet. Until this line one may still
                # land (at any call, or on any instruction in 3.10): w.step is still set
                # then, so the caller simply ends the step again.
                _set_async_exc(w.cident, None)
                w.fired = False
            w.step = None
        wall = now - st[2]
        if wall < CPU_BASE_TTL_S:
            st[0].cpu += wall
            return
        cpu = _thread_time()
        st[0].cpu += min(wall, cpu - st[1])
        w.cpu_base, w.base_at = cpu, now

    def _end_step_safely(self, w: _Worker):
        """_end_step_safely ends the step, returning the interrupt that landed meanwhile."""
        landed = None
        while True:
            try:
                self._end_step(w)
                return landed
            except Interrupt as e:
                landed = e

    def _run_step(self, w: _Worker, call: Call, fn, *args):
        """_run_step runs ``fn(*args)`` as a step of ``call`` on this thread and returns
        ``(True, value)`` or ``(False, exception)``; an interrupt that lands in the step's
        epilogue still counts as the step's outcome."""
        self._begin_step(w, call)
        try:
            try:
                out = (True, fn(*args))
            except BaseException as e:
                out = (False, e)
            landed = self._end_step_safely(w)
        except Interrupt as e:
            landed = self._end_step_safely(w) or e
        if landed is not None:
            return False, landed
        return out

    def _fire(self, w: _Worker, st, exc_type) -> None:
        """_fire raises exc_type in w's thread, only if step ``st`` is still running there."""
        with w.lock:
            if w.step is st:
                w.fired = True
                _set_async_exc(w.cident, _py_object(exc_type))

    def _fire_call(self, call: Call, exc_type) -> None:
        for w in list(self._active):
            st = w.step
            if st is not None and st[0] is call:
                self._fire(w, st, exc_type)

    # --- calls ----------------------------------------------------------------------------

    def _execute(self, w: _Worker, msg: dict) -> None:
        call_id = msg.get("callId")
        if not isinstance(call_id, str) or not call_id:
            warn("ignored an ExecuteCall without a callId")
            return
        if call_id in self._calls:
            warn(f"ignored an ExecuteCall for call {call_id}, which is already running")
            return
        self._last_call_lone = msg.get("lone") is True
        budget = msg.get("budgetMs")
        call = Call(call_id, float(budget) if type(budget) in (int, float) else DEFAULT_BUDGET_MS)
        self._calls[call_id] = call
        prefetched = msg.get("prefetched")
        if prefetched is not None:
            call.prefetched = _prefetched_of(prefetched)
        run = msg.get("run")
        if type(run) is dict and type(run.get("taskId")) is str and type(run.get("generation")) is int:
            call.run = {"task_id": run["taskId"], "generation": run["generation"]}
        try:
            self._start(w, call, msg)
        except Exception:
            self._fail(call, "INTERNAL", "the executor failed while running the call", traceback.format_exc())

    def _start(self, w: _Worker, call: Call, msg: dict) -> None:
        source = msg.get("source")
        entry = msg.get("entry") or "main"
        digest = msg.get("digest")
        if not isinstance(entry, str) or not (isinstance(source, str) or (source is None and isinstance(digest, str) and digest)):
            self._fail(call, "INTERNAL", "ExecuteCall needs an entry string and a source string or a digest")
            return
        if source is None:
            # Sent by digest: the pool sent the source earlier on this connection.
            source = self._sources.get(digest)
            if source is None:
                self._fail(call, "SOURCE_NOT_CACHED", f"this executor holds no source for digest {digest[:12]} (never sent, or evicted); send it with the source")
                return
        else:
            if not isinstance(digest, str) or not digest:
                digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
            self._sources.put(digest, source)
        name = msg.get("filename")
        name = name if isinstance(name, str) else ""
        # The same source under another file name is another unit: its tracebacks name that file.
        key = f"{digest}\0{name}" if name else digest
        unit = self._cache.get(key, source)
        if unit is None:
            call.compiled = True
            unit = self._load(w, call, digest, source, entry, name, key)
            if unit is None:
                return
        if unit.error is not None:
            self._fail_error(call, unit.error)
            return
        target = unit.entries.get(entry)
        if target is None:
            target = unit.entries[entry] = cc.resolve_entry(unit, entry)
        if type(target) is dict:
            self._fail_error(call, target)
            return
        fn, is_async = target
        if is_async:
            self._start_async(w, call, fn, msg.get("args"))
        else:
            call.ctx = SyncContext(call, self.suspend_sync, default_chain(msg.get("args")))
            ok, value = self._run_step(w, call, _invoke_sync, fn, call.ctx, msg.get("args"))
            self._settle(w, call, ok, value)

    def _load(self, w: _Worker, call: Call, digest: str, source: str, entry: str, name: str = "", key: str = ""):
        """_load compiles a source and runs its module body (both as steps of the call that
        needs it) and caches the unit under ``key`` (the digest, with the file name if any);
        None when the call already has its answer."""
        key = key or digest
        filename = user_filename(entry, digest, name)
        ok, code = self._run_step(w, call, compile, source, filename, "exec", 0, True)
        if call.finished:
            return None
        if not ok:
            if isinstance(code, Interrupt):
                self._settle(w, call, False, code)
                return None
            unit = cc.CompiledUnit(source, filename, error=describe_compile_error(code))
            self._cache.put(key, unit)
            return unit
        cc.register_source(filename, source)
        namespace = cc.new_module_namespace()
        ok, exc = self._run_step(w, call, exec, code, namespace)
        if call.finished:
            return None
        if not ok:
            self._settle(w, call, False, exc)
            if self._cache.get(key, source) is None:
                cc.forget_source(filename)
            return None
        unit = cc.CompiledUnit(source, filename, namespace)
        self._cache.put(key, unit)
        return unit

    # --- def calls: suspension on the call's own thread -------------------------------------

    def suspend_sync(self, call: Call, requests: list) -> list:
        """suspend_sync is SyncContext's way out: send CallWaiting for ``requests``, block
        this thread until ResumeCall and return its results. Runs inside the call's step,
        on the call's thread; raises Cancelled when the call ended meanwhile."""
        if getattr(tls, "call", None) is not call:
            raise RuntimeError("ctx may be used only by its own call, on the call's thread")
        w = tls.worker
        requests_json = _encode_requests(requests)  # TypeError for the user, inside the step
        if call.prefetched is not None:
            taken = self._take_prefetched(call, requests_json)
            if taken is not None:
                return taken
        landed = self._end_step_safely(w)
        try:
            if landed is not None:
                raise landed
            if call.finished:
                raise Cancelled("the call has already ended")
            if (call.cpu * 1000.0 + call.io_ms) > call.budget_ms:
                self._fail_budget(call, call.cpu)
                raise BudgetExceeded("the call is over its budget")
            # Order matters for speed: reserve the next loop thread, send CallWaiting (with
            # any frame queued before it), wake that thread, block. Sent here, not by the new
            # holder: the pool starts the request one thread wake-up (0.2-0.5 ms) sooner.
            baton = w.baton
            successor = None
            with self._wlock:
                try:
                    baton.pop()
                    holder = True
                except IndexError:
                    holder = False
            if holder:
                try:
                    successor = self._reserve()
                except RuntimeError as e:
                    baton.append(1)
                    self._warn_spawn(f"cannot start a thread to park a suspended call: {e}")
                    self._fail(call, "INTERNAL", f"the executor could not start a thread to park the suspended call: {e}")
                    raise Cancelled("no thread to park the call") from None
            slot = _allocate_lock()
            slot.acquire()
            call.slot = slot
            call.parked = w
            data = frame_bytes(_waiting_frame(call, requests_json))
            with self._wlock:
                sent = not call.finished
                if sent:
                    call.waiting = len(requests)
                    self._pending.append(data)
                    self._flush_locked()
            if successor is not None and sent and self._resume_inline(w, call):
                self._idle.append(successor)
            else:
                if successor is not None:
                    self._activate(successor)
                if not sent:
                    raise Cancelled("the call has already ended")
                self._active.discard(w)
            slot.acquire()
            self._active.add(w)
            results = call.resume
            call.resume = None
            call.slot = None
            call.parked = None
            if results is _CANCEL or call.finished:
                raise Cancelled("the call has ended")
            return results
        finally:
            self._begin_step(w, call)

    def _take_prefetched(self, call: Call, requests_json: str):
        """_take_prefetched: the results of a call's first suspension, when it asks for exactly the
        request whose answer the Worker fetched before the call started (no round trip, no thread
        hand-off); None otherwise. The answer is dropped either way: only the first is predicted."""
        p = call.prefetched
        call.prefetched = None
        if p[0] != requests_json:
            return None
        call.prefetch_used = True
        call.prefetch_io_ms = p[2]
        call.io_ms += p[2]
        return [p[1]]

    # --- async calls: a coroutine driven by hand on the baton holder -----------------------

    def _start_async(self, w: _Worker, call: Call, fn, args) -> None:
        call.is_async = True
        call.ctx = AsyncContext(call, default_chain(args))
        ok, coro = self._run_step(w, call, fn, call.ctx, args)
        if not ok or call.finished:
            self._settle(w, call, ok, coro)
            return
        if not hasattr(coro, "send") or not hasattr(coro, "throw"):
            # Not a coroutine after all (a wrapper that returned a plain value).
            ok, value = self._run_step(w, call, _encode_result, coro)
            self._settle(w, call, ok, value)
            return
        call.coro = coro
        self._drive(w, call, None, None)

    def _drive(self, w: _Worker, call: Call, value, exc) -> None:
        """_drive steps a coroutine until it suspends on a ctx request or ends."""
        coro = call.coro
        while True:
            if exc is None:
                ok, out = self._run_step(w, call, coro.send, value)
            else:
                ok, out = self._run_step(w, call, coro.throw, exc)
            if call.finished:
                self._discard(w, call)
                return
            if not ok:
                if type(out) is StopIteration:
                    ok, encoded = self._run_step(w, call, _encode_result, out.value)
                    self._settle(w, call, ok, encoded)
                else:
                    self._settle(w, call, False, out)
                call.coro = None
                return
            if type(out) is Suspension:
                try:
                    requests_json = _encode_requests(out.requests)
                except TypeError as e:
                    value, exc = None, e
                    continue
                if call.prefetched is not None:
                    taken = self._take_prefetched(call, requests_json)
                    if taken is not None:
                        value, exc = taken, None
                        continue
                if (call.cpu * 1000.0 + call.io_ms) > call.budget_ms:
                    self._fail_budget(call, call.cpu)
                    self._discard(w, call)
                    return
                data = frame_bytes(_waiting_frame(call, requests_json))
                with self._wlock:
                    if call.finished:
                        sent = False
                    else:
                        sent = True
                        call.waiting = len(out.requests)
                        self._pending.append(data)
                        if not w.baton:
                            self._flush_locked()
                if not sent:
                    self._discard(w, call)
                return
            value, exc = None, RuntimeError(f"an async entry may await only ctx operations (it awaited something that yielded {type(out).__name__})")

    def _discard(self, w: _Worker, call: Call) -> None:
        """_discard closes the coroutine of a call that already has its answer."""
        coro = call.coro
        call.coro = None
        if coro is not None:
            self._run_step(w, call, coro.close)

    # --- ResumeCall and CancelCall ----------------------------------------------------------

    def _resume(self, w: _Worker, msg: dict) -> None:
        call = self._calls.get(msg.get("callId"))
        if call is None:
            return  # finished or cancelled meanwhile
        n = call.waiting
        if n is None:
            warn(f"ignored a ResumeCall for call {call.id}, which is not waiting")
            return
        call.waiting = None
        try:
            io_ms = msg.get("ioMs")
            if type(io_ms) in (int, float):
                # The pool counts what it served; a prefetched answer it served before the call began.
                call.io_ms = float(io_ms) + call.prefetch_io_ms
            results = msg.get("results")
            if type(results) is not list or len(results) != n:
                got = len(results) if type(results) is list else type(results).__name__
                self._fail(call, "INTERNAL", f"ResumeCall carried {got} results for {n} requests")
                self._abort_parked(w, call)
                return
            if (call.cpu * 1000.0 + call.io_ms) > call.budget_ms:
                self._fail_budget(call, call.cpu)
                self._abort_parked(w, call)
                return
            if call.is_async:
                self._drive(w, call, results, None)
            else:
                call.resume = results
                # The frames queued so far (other calls' results) go before the baton does:
                # the resumed call runs its step before it reads the socket again.
                with self._wlock:
                    self._flush_locked()
                self._pass_baton(w, call.parked)
                call.slot.release()
        except Exception:
            self._fail(call, "INTERNAL", "the executor failed while resuming the call", traceback.format_exc())
            self._abort_parked(w, call)

    def _pass_baton(self, w: _Worker, to: _Worker) -> None:
        """_pass_baton makes the thread of a resumed def call the loop: it finishes its call
        inline and goes on reading frames, while this thread goes idle. Waking every parked
        thread instead would leave them all fighting for the GIL (measured: 2-3x slower).
        The new holder's token stands for the frame it is in the middle of."""
        try:
            w.baton.pop()
        except IndexError:
            return  # not the holder (cannot happen here): the resumed thread runs beside us
        to.baton = [1]
        self._owner = to
        self._active.add(to)

    def _abort_parked(self, w: _Worker, call: Call) -> None:
        """_abort_parked unwinds a suspended call that already has its answer."""
        if call.is_async:
            self._discard(w, call)
        else:
            slot = call.slot
            if slot is not None and slot.locked():
                call.resume = _CANCEL
                slot.release()

    def _cancel(self, w: _Worker, msg: dict) -> None:
        call = self._calls.get(msg.get("callId"))
        if call is None:
            return
        reason = msg.get("reason")
        message = f"call cancelled: {reason}" if isinstance(reason, str) and reason else "call cancelled"
        if not self._fail(call, "CANCELLED", message):
            return
        # After _fail no thread can park the call any more: waiting is final now.
        if call.waiting is not None:
            call.waiting = None
            self._abort_parked(w, call)
        else:
            self._fire_call(call, Cancelled)

    # --- the monitor ------------------------------------------------------------------------

    def _monitor(self) -> None:
        """_monitor enforces budgets mid-step, stops steps of finished calls, and takes the
        baton from a loop thread stuck in a long step. It sleeps while nothing runs."""
        quiet = 0
        seen_steps = -1
        while True:
            time.sleep(TICK_S)
            try:
                busy = self._tick()
            except Exception:
                warn("monitor tick failed:\n" + traceback.format_exc())
                busy = True
            steps = self._steps
            if busy or steps != seen_steps:
                seen_steps = steps
                quiet = 0
                continue
            quiet += 1
            if quiet < MONITOR_IDLE_TICKS:
                continue
            self._mon_sleeping = True
            if not any(w.step is not None for w in list(self._active)):
                self._mon_event.wait()
            self._mon_event.clear()
            self._mon_sleeping = False
            quiet = 0

    def _tick(self) -> bool:
        now = _monotonic()
        owner = self._owner
        busy = False
        zombies = {}
        for w in list(self._active):
            st = w.step
            if st is None:
                continue
            busy = True
            call, cpu0, wall0 = st
            if w is owner and now - wall0 > HANDOFF_AFTER_S:
                self._take_baton(w)
            try:
                cpu_now = _clock_gettime(w.clock)
            except (OSError, TypeError):
                continue
            if call.finished:
                zombies[st] = self._zombies.get(st, cpu_now)
                self._stop_zombie(w, st, cpu_now - zombies[st])
                continue
            cpu = call.cpu + (cpu_now - cpu0)
            if cpu * 1000.0 + call.io_ms > call.budget_ms:
                self._fail_budget(call, cpu)
                self._fire(w, st, BudgetExceeded)
        self._zombies = zombies
        return busy

    def _stop_zombie(self, w: _Worker, st, cpu_since_seen: float) -> None:
        """_stop_zombie keeps interrupting a step whose call already has its answer. User
        code that swallows BaseException could spin forever; after ZOMBIE_CPU_LIMIT_S of CPU
        the process exits and the pool starts a fresh executor."""
        if cpu_since_seen > ZOMBIE_CPU_LIMIT_S:
            warn(f"call {st[0].id} kept running for {ZOMBIE_CPU_LIMIT_S:.0f} s of CPU after it was stopped (does it catch BaseException?); exiting so that the pool starts a fresh executor")
            os._exit(3)
        self._fire(w, st, Cancelled)

    def _take_baton(self, w: _Worker) -> None:
        """_take_baton moves the loop off a thread stuck in a long step. The successor is
        reserved first: once the token is gone, the old holder may already have left."""
        try:
            nw = self._reserve()
        except RuntimeError as e:
            self._warn_spawn(f"cannot start a thread to take over the frame loop from a long step: {e}")
            return
        with self._wlock:  # see _finish
            try:
                w.baton.pop()
                taken = True
            except IndexError:
                taken = False  # the step ended meanwhile
        if taken:
            self._activate(nw)
        else:
            self._idle.append(nw)


def _encode_requests(requests: list) -> str:
    try:
        data = _dumps(requests)
    except Exception as e:
        raise TypeError(f"ctx request parameters must be JSON-serialisable: {e}") from None
    if len(data) > MAX_FRAME_BYTES - 4096:
        raise ValueError(f"ctx requests are too large to send: {len(data)} bytes of JSON (the frame limit is 64 MiB)")
    return data


def _prefetched_of(p):
    """_prefetched_of reads an ExecuteCall's prefetched answer: (the JSON of the one-request list
    it answers, spelled as ctx spells its requests; its result; its IO ms), or None when malformed."""
    if type(p) is not dict:
        return None
    backend, op, result = p.get("backend"), p.get("op"), p.get("result")
    if type(backend) is not str or type(op) is not str or type(result) is not dict or result.get("ok") is not True:
        return None
    try:
        key = _dumps([{"kind": "io", "backend": backend, "op": op, "params": p.get("params")}])
    except (TypeError, ValueError, RecursionError):
        return None
    io_ms = p.get("ioMs")
    return key, result, float(io_ms) if type(io_ms) in (int, float) and io_ms >= 0 else 0.0


def _waiting_frame(call: Call, requests_json: str) -> str:
    return '{"type":"CallWaiting","callId":' + _dumps(call.id) + ',"requests":' + requests_json + ',"cpuMs":' + repr(_ms(call.cpu)) + "}"
