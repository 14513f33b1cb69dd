#!/usr/bin/env python3
"""blockx-py end to end, after `blockx dev`:

    source /tmp/blockx-dev-XXXXXX/blockx-dev.env      # the path dev printed
    PYTHONPATH=client-py /usr/bin/python3 examples/python-client/run_examples.py [FROM TO]

1. checks the block-statistics function on the Sync Invoker (precheck, then one debug call);
2. backfills blocks FROM..TO-1 (default 18000000..18000499) into the `block_stats` table with a
   progress bar, through the proxy when PROXY_SOCKET_PATH is set;
3. runs the fan-out example over four ranges (return values, sub-calls by name in ctx.call_many);
4. prints a failing call the way your code would see it.
"""
import os
import sys
import time

from blockx import CallFailed, Client

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.dirname(HERE)
BLOCK_STATS = os.path.join(EXAMPLES, "block-stats", "block_stats.py")


def main(argv):
    start, stop = (int(argv[1]), int(argv[2])) if len(argv) == 3 else (18_000_000, 18_000_500)
    # The fan-out example calls block_summary by name: Workers read FUNCTIONS_DIR every second,
    # so it is copied there first.
    functions_dir = os.environ.get("FUNCTIONS_DIR")
    if functions_dir:
        with open(os.path.join(EXAMPLES, "fanout", "block_summary.py")) as f, open(os.path.join(functions_dir, "block_summary.py"), "w") as g:
            g.write(f.read())
    with Client.from_env() as client:
        print(f"client: {'proxy ' + client.config.proxy_socket_path if client.via_proxy else 'direct'}")

        check = client.precheck(BLOCK_STATS)
        print(f"precheck block_stats.py: ok={check.ok} {[str(d) for d in check.diagnostics]}")
        one = client.debug_invoke(BLOCK_STATS, {"chain": "ethereum", "blockNumber": start})
        print(f"one call: {one.result()[0]} io={[(x['backend'], x['op']) for x in one.io_trace]}")

        run = client.run_task(function=BLOCK_STATS, blocks=range(start, stop), chain="ethereum", table="block_stats", progress=True)
        print(f"backfill: {run.state} on {run.workers} attempts={run.attempts} writes={run.writes}")

        if functions_dir:
            ranges = [{"chain": "ethereum", "fromBlock": start + i * 10, "toBlock": start + i * 10 + 9} for i in range(4)]
            for attempt in range(10):
                fanout = client.run_task(function=os.path.join(EXAMPLES, "fanout", "range_summary.py"), inputs=ranges)
                err = fanout.error
                if err is None or "FUNCTION_NOT_FOUND" not in err.error_message:
                    break
                time.sleep(1)  # a Worker has not re-read FUNCTIONS_DIR yet
            totals = fanout.result()
            for r, t in zip(ranges, totals):
                print(f"fanout {r['fromBlock']}..{r['toBlock']}: {t}")

        failing = client.run_task(source="def main(ctx, x):\n    return 100 // x\n", inputs=[4, 0, 5])
        try:
            failing.result()
        except CallFailed as e:
            print(f"a failing task raises CallFailed: call {e.call_index}, input {e.call_input}, {e.error_message}")
            print(e.traceback, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
