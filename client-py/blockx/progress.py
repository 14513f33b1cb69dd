"""Progress display of run_task(progress=True): Debian's python3-tqdm when it is installed (a bar in
terminals and notebooks), a plain line otherwise (redrawn in place on a terminal, every 2 s and on
each state change elsewhere). Both show calls done/total, rate and ETA."""
from __future__ import annotations

import sys
import time
from typing import IO, Optional

from .policy import Progress


def _eta(ms: Optional[float]) -> str:
    if ms is None:
        return "--:--"
    s = int(ms / 1000)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


def plain_line(p: Progress, state: str) -> str:
    width = 20
    fill = int(p.fraction * width)
    failed = f"  {p.failed} failed" if p.failed else ""
    return f"[{'#' * fill}{'.' * (width - fill)}] {int(p.fraction * 100):3d}%  {p.done}/{p.total} calls  {p.rate_per_s:.1f}/s  ETA {_eta(p.eta_ms)}  {state}{failed}"


class ProgressDisplay:
    """ProgressDisplay shows one task's progress; ``kind`` is "auto" (tqdm when importable),
    "tqdm" or "plain"."""

    def __init__(self, task_id: str, kind: str = "auto", stream: Optional[IO[str]] = None) -> None:
        self._stream = stream or sys.stderr
        self._task_id = task_id
        self._bar = None
        self._last_plain = 0.0
        self._last_state = ""
        if kind not in ("auto", "tqdm", "plain"):
            raise ValueError(f"progress must be True, False, 'tqdm' or 'plain', not {kind!r}")
        if kind in ("auto", "tqdm"):
            try:
                from tqdm.auto import tqdm  # type: ignore[import-not-found]
                self._bar = tqdm(total=0, unit="call", desc=task_id, file=self._stream, dynamic_ncols=True)
            except ImportError:
                if kind == "tqdm":
                    raise
        self._tty = self._bar is None and hasattr(self._stream, "isatty") and self._stream.isatty()

    @property
    def uses_tqdm(self) -> bool:
        return self._bar is not None

    def update(self, p: Progress, state: str) -> None:
        if self._bar is not None:
            if self._bar.total != p.total:
                self._bar.total = p.total
            self._bar.n = p.done
            self._bar.set_postfix_str(state + (f" {p.failed} failed" if p.failed else ""), refresh=False)
            self._bar.refresh()
            return
        now = time.monotonic()
        if self._tty:
            self._stream.write("\r\x1b[2K" + plain_line(p, state))
            self._stream.flush()
        elif state != self._last_state or now - self._last_plain >= 2.0:
            self._stream.write(f"{self._task_id} {plain_line(p, state)}\n")
            self._stream.flush()
            self._last_plain = now
        self._last_state = state

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self._tty:
            self._stream.write("\n")
            self._stream.flush()
