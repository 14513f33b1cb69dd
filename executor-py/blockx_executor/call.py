"""Call: the state of one call inside the executor."""

OUTPUT_CAP_CHARS = 1 << 20
OUTPUT_TRUNCATED = "\n[output truncated]"
LOG_CAP_LINES = 1000
LOG_MESSAGE_CAP_CHARS = 16 << 10


class Call:
    """Call holds one call's accounting and what it produced.

    ``finished`` flips to True exactly once, under the engine's write lock, when the final
    frame (CallCompleted or CallFailed) is queued; after that nothing else is sent for the
    call and whatever its user code still does is discarded. ``waiting`` is the number of
    requests of the pending CallWaiting (None while not suspended)."""

    __slots__ = (
        "id",
        "budget_ms",
        "cpu",
        "io_ms",
        "out",
        "out_len",
        "err_parts",
        "logs",
        "logs_truncated",
        "compiled",
        "finished",
        "is_async",
        "coro",
        "waiting",
        "slot",
        "parked",
        "resume",
        "prefetched",
        "prefetch_used",
        "prefetch_io_ms",
        "run",
        "ctx",
    )

    def __init__(self, call_id: str, budget_ms: float) -> None:
        self.id = call_id
        self.budget_ms = budget_ms
        self.cpu = 0.0  # seconds of CPU over all finished steps
        self.io_ms = 0.0
        self.out = []
        self.out_len = 0
        self.err_parts = None  # indices into out of what was written to stderr; None: nothing was
        self.logs = []
        self.logs_truncated = False
        self.compiled = False
        self.finished = False
        self.is_async = False
        self.coro = None
        self.waiting = None
        self.slot = None
        self.parked = None
        self.resume = None
        # The answer the Worker fetched before the call started, for the request it expects first:
        # (that request list's JSON, its result, its IO ms), or None. Dropped at the first suspension.
        self.prefetched = None
        # The run of its task the call belongs to ({"task_id", "generation"}), or None (ctx.run).
        self.run = None
        # The ctx handed to the entry (None while the module body loads): blockx_executor.current_context().
        self.ctx = None
        self.prefetch_used = False
        self.prefetch_io_ms = 0.0

    def write_output(self, s: str, stderr: bool = False) -> None:
        used = self.out_len
        if used >= OUTPUT_CAP_CHARS:
            return
        if stderr:
            if self.err_parts is None:
                self.err_parts = set()
            self.err_parts.add(len(self.out))
        n = len(s)
        if used + n <= OUTPUT_CAP_CHARS:
            self.out.append(s)
            self.out_len = used + n
        else:
            self.out.append(s[: OUTPUT_CAP_CHARS - used])
            self.out.append(OUTPUT_TRUNCATED)
            self.out_len = OUTPUT_CAP_CHARS

    def output(self) -> str:
        """output: stdout and stderr interleaved in the order written (capped at 1 MiB together)."""
        out = self.out
        if not out:
            return ""
        return "".join(out)

    def split_output(self):
        """split_output: (stdout, stderr) apart, or None when nothing went to stderr (then
        stdout is output())."""
        err = self.err_parts
        if err is None:
            return None
        out = self.out
        return "".join(s for i, s in enumerate(out) if i not in err), "".join(s for i, s in enumerate(out) if i in err)

    def add_log(self, time_ms: int, level: str, message: str) -> None:
        if len(message) > LOG_MESSAGE_CAP_CHARS:
            message = message[:LOG_MESSAGE_CAP_CHARS] + " [message truncated]"
        logs = self.logs
        if len(logs) < LOG_CAP_LINES:
            logs.append({"timeMs": time_ms, "level": level, "message": message})
        elif not self.logs_truncated:
            self.logs_truncated = True
            logs[-1] = {"timeMs": time_ms, "level": "warning", "message": "[logs truncated]"}
