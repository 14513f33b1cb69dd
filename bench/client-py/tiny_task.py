"""blockx-py side of bench/client-py/tiny-task.ts: tiny tasks (one input, return value) end to end
through Client.run_task, then BATCH_TASKS of them through Client.run_tasks (the batch path,
BATCH_INFLIGHT in flight, batches of up to 256); prints one JSON line {p50_ms, p99_ms, per_s, batch_per_s}.

usage: /usr/bin/python3 tiny_task.py MODE(proxy|direct) SERIAL_TASKS INFLIGHT SECONDS BATCH_TASKS BATCH_INFLIGHT  (client variables in env)
"""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "client-py"))

from blockx import Client  # noqa: E402

SRC = "def main(ctx, x):\n    return x + 1\n"


def main(mode: str, n: int, inflight: int, seconds: float, batch_tasks: int, batch_inflight: int) -> None:
    with Client.from_env(direct=(mode == "direct")) as c:
        for i in range(20):
            assert c.run_task(source=SRC, inputs=[i]).result() == [i + 1]
        samples = []
        for i in range(n):
            t = time.perf_counter()
            c.run_task(source=SRC, inputs=[i])
            samples.append((time.perf_counter() - t) * 1000)
        samples.sort()
        done = [0]
        lock = threading.Lock()
        end = time.perf_counter() + seconds

        def lane() -> None:
            while time.perf_counter() < end:
                c.run_task(source=SRC, inputs=[1])
                with lock:
                    done[0] += 1

        threads = [threading.Thread(target=lane) for _ in range(inflight)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
        tasks = [c.task(source=SRC, inputs=[i]) for i in range(batch_tasks)]
        t0 = time.perf_counter()
        outcomes = c.run_tasks(tasks, concurrency=batch_inflight, batch_size=256)
        batch_elapsed = time.perf_counter() - t0
        assert all(o.ok and o.run.succeeded for o in outcomes)
    print(json.dumps({"p50_ms": samples[n // 2], "p99_ms": samples[min(n - 1, int(n * 0.99))], "per_s": done[0] / elapsed,
                      "batch_per_s": batch_tasks / batch_elapsed}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
