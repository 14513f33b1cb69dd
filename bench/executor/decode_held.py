"""bench/executor/decode_held.py: what holding many decoded blocks at once costs per block, and what
Python's first-generation GC threshold has to do with it (why executors set it to 100,000).

One plain python3 process reads full blocks from a block store by offset (os.pread, as an executor
reads a mapped answer), json.loads each and computes the backfill's row: one block at a time (the
baseline of the same run), or N at a time, all decoded before the first row is computed, as a
bundle's function gets them from ctx.io_many. Each at Python's default threshold (700) and at the
executors' (100,000). CPU microseconds per block, medians of interleaved rounds.

    python3 bench/executor/decode_held.py [--store FILE] [--blocks 2000] [--held 10,25,100] [--rounds 3]

Without --store, 2,000 blocks are rendered first with `dist/blockx localchain render` (untimed).
"""
import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

_parser = argparse.ArgumentParser()
_parser.add_argument("--store", default="")
_parser.add_argument("--blocks", type=int, default=2000)
_parser.add_argument("--held", default="10,25,100")
_parser.add_argument("--rounds", type=int, default=3)
ARGS = _parser.parse_args()
HERE = os.path.dirname(os.path.abspath(__file__))
EXECUTOR_THRESHOLD = (100_000, 10, 10)


def store_path():
    if ARGS.store:
        return ARGS.store, None
    tmp = tempfile.mkdtemp(prefix="blockx-decode-held-")
    path = os.path.join(tmp, "blocks.store")
    blockx = os.path.join(HERE, "..", "..", "dist", "blockx")
    subprocess.run([blockx, "localchain", "render", "--chain", "ethereum", "--from", "0", "--to", str(ARGS.blocks - 1), "--out", path], check=True, stdout=subprocess.DEVNULL)
    return path, tmp


def spans_of(path):
    spans = []
    with open(path, "rb") as f:
        f.readline()  # the store's header
        off = f.tell()
        for line in f:
            if len(spans) >= ARGS.blocks:
                break
            spans.append((off, len(line) - 1))
            off += len(line)
    return spans


def row(b):
    return {"block": int(b["number"], 16), "tx_count": len(b["transactions"]), "gas_used": int(b["gasUsed"], 16)}


def run(fd, spans, held):
    t = time.process_time()
    rows = []
    for k in range(0, len(spans), held):
        blocks = [json.loads(os.pread(fd, n, off)) for off, n in spans[k : k + held]]
        rows.extend(row(b) for b in blocks)
        del blocks
    if len(rows) != len(spans):
        raise SystemExit("rows lost")
    return (time.process_time() - t) / len(spans) * 1e6


def main():
    path, tmp = store_path()
    try:
        spans = spans_of(path)
        fd = os.open(path, os.O_RDONLY)
        series = [1] + [int(h) for h in ARGS.held.split(",")]
        thresholds = {"default (700, 10, 10)": gc.get_threshold(), "executors' (100000, 10, 10)": EXECUTOR_THRESHOLD}
        results = {(t, h): [] for t in thresholds for h in series}
        for r in range(ARGS.rounds):
            keys = list(results)
            for key in keys[r % len(keys):] + keys[: r % len(keys)]:
                gc.set_threshold(*thresholds[key[0]])
                results[key].append(run(fd, spans, key[1]))
        print(f"CPU µs per block, {len(spans)} full blocks, medians of {ARGS.rounds} interleaved rounds (Python {sys.version.split()[0]})\n")
        print("| GC threshold | " + " | ".join("one at a time (baseline)" if h == 1 else f"{h} held" for h in series) + " |")
        print("| --- | " + " | ".join("---:" for _ in series) + " |")
        for t in thresholds:
            base = statistics.median(results[(t, 1)])
            cells = [f"{base:.0f}"] + [f"{statistics.median(results[(t, h)]):.0f} ({statistics.median(results[(t, h)]) / base:.2f}x)" for h in series[1:]]
            print(f"| {t} | " + " | ".join(cells) + " |")
    finally:
        if tmp:
            subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
