"""bench/executor/engine_call.py: the executor engine's own CPU per tiny call, in one process.

The engine (blockx_executor.engine.Engine) is fed ExecuteCall frames of `def main(ctx, x): return
x + 1` straight into its dispatch, on a socket that drops what is sent, so the figure is the
engine's work per call (decode, look up, run as a step, account, encode, frame) without socket IO
or any wake-up. Baseline of the same run: the bare protocol work of a call (json.loads of the same
frame, the same CallCompleted written with json.dumps and framed), which no engine can skip.
Medians of interleaved rounds.

    python3 bench/executor/engine_call.py [--calls 30000] [--rounds 5] [--package DIR]

--package DIR benches the blockx_executor package under DIR (e.g. an older commit's executor-py,
from `git worktree add`) instead of this checkout's.
"""
import argparse
import hashlib
import json
import os
import statistics
import struct
import sys
import time

_parser = argparse.ArgumentParser()
_parser.add_argument("--calls", type=int, default=30000)
_parser.add_argument("--rounds", type=int, default=5)
_parser.add_argument("--package", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "executor-py"))
ARGS = _parser.parse_args()
sys.path.insert(0, ARGS.package)  # before the import: the package benched is the one asked for
from blockx_executor import engine as E  # noqa: E402

SOURCE = "def main(ctx, x):\n    return x + 1\n"
DIGEST = hashlib.sha256(SOURCE.encode()).hexdigest()


class DropSocket:
    def sendall(self, data):
        pass


def frames(n, start):
    return [bytearray(json.dumps({"type": "ExecuteCall", "callId": f"c{start + i}", "digest": DIGEST, "entry": "main", "args": i, "budgetMs": 5000}).encode()) for i in range(n)]


def engine_series():
    eng = E.Engine(DropSocket(), "bench")
    w = E._Worker(idle=False, main=True)
    w.attach()
    eng._owner = w
    eng._active.add(w)
    w.baton.append(1)
    first = json.dumps({"type": "ExecuteCall", "callId": "warm", "digest": DIGEST, "source": SOURCE, "entry": "main", "args": 0, "budgetMs": 5000}).encode()
    eng._dispatch(w, bytearray(first))
    eng._flush_locked()

    def run(batch):
        t = time.perf_counter()
        for raw in batch:
            eng._dispatch(w, raw)
            eng._flush_locked()
        return (time.perf_counter() - t) / len(batch)

    return run


def bare(batch):
    pack = struct.Struct(">I").pack
    t = time.perf_counter()
    for raw in batch:
        msg = json.loads(raw)
        body = json.dumps({"type": "CallCompleted", "callId": msg["callId"], "result": msg["args"] + 1, "cpuMs": 0.01, "output": "", "logs": [], "compiled": False}, separators=(",", ":")).encode()
        pack(len(body)) + body
    return (time.perf_counter() - t) / len(batch)


def main():
    a = ARGS
    run = engine_series()
    results = {"engine": [], "bare": []}
    n = 0
    for r in range(a.rounds):
        order = ["engine", "bare"] if r % 2 == 0 else ["bare", "engine"]
        for k in order:
            batch = frames(a.calls, n)
            n += a.calls
            results[k].append((run if k == "engine" else bare)(batch) * 1e6)
    eng = statistics.median(results["engine"])
    base = statistics.median(results["bare"])
    print(f"Executor engine, CPU per tiny call (`return x + 1`), {a.calls} calls per round, medians of {a.rounds} interleaved rounds ({sys.executable}, Python {sys.version.split()[0]}; package {os.path.abspath(a.package)})\n")
    print("| series | µs per call | vs baseline |")
    print("| --- | ---: | ---: |")
    print(f"| bare protocol work: json.loads the frame, json.dumps the answer, frame it (baseline) | {base:.2f} | 1.00x |")
    print(f"| the engine's dispatch of the call | {eng:.2f} | {eng / base:.2f}x |")


if __name__ == "__main__":
    main()
