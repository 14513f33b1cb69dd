"""bench/worker/floor.py: the backfill floor. One plain python3 process reads JSON lines of
eth_getBlockByNumber results (full transactions) -- the block store the Worker serves from, whose
first line is a header -- json.loads each block (the first LIMIT blocks, when given) and computes
the same row as the backfill's function (block, tx_count, gas_used). Prints {"seconds", "cpu_seconds", "count"} as JSON."""
import json
import sys
import time


def main(ctx, b):
    return [{'block': int(b['number'], 16), 'tx_count': len(b['transactions']), 'gas_used': int(b['gasUsed'], 16)}]


def run(path, limit):
    t0 = time.perf_counter()
    c0 = time.process_time()
    rows = []
    with open(path, 'r') as f:
        header = f.readline()
        assert header.startswith('{"blockxBlockStore"'), 'not a block store'
        for line in f:
            if len(rows) >= limit:
                break
            rows.extend(main(None, json.loads(line)))
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - c0
    print(json.dumps({'seconds': elapsed, 'cpu_seconds': cpu, 'count': len(rows)}))


if __name__ == '__main__':
    run(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 62)
