"""HotSpinPolicy decides whether the executor spins for its next request, from what spinning and
sleeping have each cost on this machine lately.

A spin (Engine._spin_recv) takes the kernel's wake-up out of the next request's path, but on a
machine with about as many busy processes as cores it also holds a core that the request needs on
its way here (the client, the invoker). With the same build and bench
(bench/syncinvoker/invoke.ts) the spin's p50 was 0.84-0.96x the p50 without it on one day and
1.01-1.43x on another. So the executor measures both ways: every wait that may spin (Engine._receive)
is timed from the answer sent to the next request read, and filed under the way it waited. The
executor spins while the median of its recent spun waits is clearly (SPIN_MARGIN) below that of its
slept ones, and sleeps otherwise; one eligible wait in EXPLORE_EVERY goes the other way, so that the
figure of the way not taken stays current (when the host changes, so does the choice).

Pure: no clocks, no IO; the engine reports each wait.
"""

from bisect import bisect_left, insort
from collections import deque

# Recent waits kept per way; their median is that way's cost.
WINDOW = 48
# A way needs this many recent waits before it is compared with the other.
MIN_WAITS = 12
# One eligible wait in this many goes the way not preferred.
EXPLORE_EVERY = 16
# Spinning is preferred only when its median wait is at least this much below sleeping's: a spin
# costs CPU, which a gain lost in the noise does not pay for.
SPIN_MARGIN = 0.10


class HotSpinPolicy:
    __slots__ = ("limit_s", "_spun", "_slept", "_count", "_prefer_spin")

    def __init__(self, limit_s: float) -> None:
        # Waits longer than the spin: the caller paused. Neither way would have caught the request
        # in time, so such a wait says nothing of which way is faster.
        self.limit_s = limit_s
        self._spun = _Window()
        self._slept = _Window()
        self._count = 0
        self._prefer_spin = True  # the configured intent, until both ways have been measured

    @property
    def prefers_spin(self) -> bool:
        return self._prefer_spin

    def choose(self) -> bool:
        """choose: whether the next eligible wait spins."""
        self._count += 1
        if self._count % EXPLORE_EVERY == 0:
            return not self._prefer_spin
        return self._prefer_spin

    def observe(self, spun: bool, wait_s: float) -> None:
        """observe files one eligible wait (seconds from the answer sent to the next request read)
        under the way it waited, and updates the choice."""
        if wait_s > self.limit_s:
            return
        (self._spun if spun else self._slept).add(wait_s)
        if len(self._spun) >= MIN_WAITS and len(self._slept) >= MIN_WAITS:
            self._prefer_spin = self._spun.median() < self._slept.median() * (1.0 - SPIN_MARGIN)


class _Window:
    """_Window: the last WINDOW waits of one way, in arrival order and sorted (on the lone call's
    path: a median by index, not by sorting: 0.6 us an observation instead of 3)."""

    __slots__ = ("order", "sorted")

    def __init__(self) -> None:
        self.order = deque()
        self.sorted = []

    def add(self, wait_s: float) -> None:
        self.order.append(wait_s)
        insort(self.sorted, wait_s)
        if len(self.order) > WINDOW:
            del self.sorted[bisect_left(self.sorted, self.order.popleft())]

    def __len__(self) -> int:
        return len(self.order)

    def median(self) -> float:
        s = self.sorted
        n = len(s)
        return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0
