"""Pure decisions of the client, ports of src/sdk/core (retry-policy.ts, cluster-selection.ts,
progress.ts): no clock, no randomness, no IO; time and ``rand`` in [0, 1) come in."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

#: The retryable answers of ReserveWorkerSlot / SubmitTask (SYSTEM.md section 2).
RETRYABLE = ("UNAVAILABLE", "RESOURCE_EXHAUSTED", "ABORTED")


@dataclass(frozen=True)
class RetryPolicyConfig:
    slot_ttl_ms: float = 5000
    backoff_base_ms: float = 100
    backoff_max_ms: float = 5000
    unavailable_jitter_ms: float = 50


@dataclass(frozen=True)
class Retry:
    delay_ms: float
    next_coordinator: bool


@dataclass(frozen=True)
class GiveUp:
    code: str  # NO_CAPACITY or UNREACHABLE


class ReservePolicy:
    """ReservePolicy decides what the client does after a retryable refusal: Unavailable -> retry
    now with up to 50 ms of jitter on the next Coordinator (after a whole round of the list
    failed, back off); ResourceExhausted -> exponential back-off (100 ms doubling to 5 s, jitter
    between half and the whole); Aborted -> wait one slot TTL plus up to 20%. It never waits past
    the deadline: giving up says NO_CAPACITY after any capacity refusal since the last success,
    UNREACHABLE when the cluster never answered."""

    def __init__(self, config: RetryPolicyConfig, coordinator_count: int) -> None:
        self._config = config
        self._coordinators = max(1, coordinator_count)
        self._unavailable = 0
        self._exhausted = 0
        self._saw_capacity_refusal = False

    def succeeded(self) -> None:
        self._unavailable = 0
        self._exhausted = 0
        self._saw_capacity_refusal = False

    def decide(self, failure: str, now_ms: float, deadline_ms: float, rand: float):
        if failure not in RETRYABLE:
            raise ValueError(f"not a retryable failure: {failure}")
        if failure != "UNAVAILABLE":
            self._saw_capacity_refusal = True
        left = deadline_ms - now_ms
        nxt = False
        if failure == "UNAVAILABLE":
            self._unavailable += 1
            rounds = (self._unavailable - 1) // self._coordinators
            delay = rand * self._config.unavailable_jitter_ms if rounds == 0 else self._backoff(rounds - 1, rand)
            nxt = True
        elif failure == "RESOURCE_EXHAUSTED":
            delay = self._backoff(self._exhausted, rand)
            self._exhausted += 1
        else:
            delay = self._config.slot_ttl_ms * (1 + 0.2 * rand)
        if delay >= left:
            return GiveUp("NO_CAPACITY" if self._saw_capacity_refusal else "UNREACHABLE")
        return Retry(delay, nxt)

    def _backoff(self, n: int, rand: float) -> float:
        full = min(self._config.backoff_max_ms, self._config.backoff_base_ms * 2 ** min(n, 30))
        return full * (0.5 + 0.5 * rand)


def cluster_for(task, override: Optional[str] = None) -> str:
    """cluster_for: block-table calls and anything with a ReturnValueHandler -> block; bundles
    and inputs -> bundle. An explicit choice wins. ``task`` is a worker.v1.Task message."""
    if override is not None:
        if override not in ("block", "bundle"):
            raise ValueError(f"cluster must be 'block' or 'bundle', not {override!r}")
        return override
    if any(o.WhichOneof("handler") == "return_value" for o in task.outputs):
        return "block"
    if task.function_call_config.WhichOneof("config") == "block_table":
        return "block"
    return "bundle"


def resubmit_by_default(task) -> bool:
    """resubmit_by_default: every task reruns when its Worker is lost. block_table_write replaces
    per block, normal_table_write per call of the task (a rerun's call replaces what the same call
    of the lost run wrote), return_value is the caller's, and the rerun fences the lost run off."""
    return True


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    failed: int
    rate_per_s: float
    eta_ms: Optional[float]

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total > 0 else 0.0


class ProgressMeter:
    """ProgressMeter: call counts seen at ``now_ms`` -> rate and ETA over a sliding window."""

    def __init__(self, window_ms: float = 5000) -> None:
        self._window_ms = window_ms
        self._samples: List[Tuple[float, int]] = []

    def update(self, total: int, succeeded: int, failed: int, now_ms: float) -> Progress:
        done = succeeded + failed
        self._samples.append((now_ms, done))
        while len(self._samples) > 2 and self._samples[0][0] < now_ms - self._window_ms:
            self._samples.pop(0)
        at, first_done = self._samples[0]
        span = now_ms - at
        rate = (done - first_done) * 1000 / span if span > 0 else 0.0
        remaining = max(0, total - done)
        eta = 0.0 if remaining == 0 else (remaining / rate * 1000 if rate > 0 else None)
        return Progress(done, total, failed, rate, eta)
