"""The words of a SubmitTask refused because the task id's run is on another Worker
(TASK_RUN_ELSEWHERE, gRPC ALREADY_EXISTS), as the Worker writes them (src/common/run-elsewhere.ts
holds the same pattern): the client follows that Worker instead of running the task twice."""
import re
from typing import NamedTuple, Optional

RUN_ELSEWHERE_PATTERN = re.compile(r"^task (\S+) (?:is (RUNNING|running)|already ([A-Z_]+)) on (\S+) \(run (\d+)\)")


class RunElsewhere(NamedTuple):
    task_id: str
    worker_addr: str
    generation: int
    state: str


def parse_run_elsewhere(message: str) -> Optional[RunElsewhere]:
    """parse_run_elsewhere reads a refusal (with or without its ``[TASK_RUN_ELSEWHERE] `` prefix); None for any other message."""
    m = RUN_ELSEWHERE_PATTERN.match(re.sub(r"^\[TASK_RUN_ELSEWHERE\] ", "", message))
    if not m:
        return None
    return RunElsewhere(m.group(1), m.group(4), int(m.group(5)), "RUNNING" if m.group(2) else m.group(3))
