#!/usr/bin/env bash
# bench/worker/compare-builds.sh BEFORE AFTER [ROUNDS]: the Worker's task path before and after a
# change, on this machine, in one run. BEFORE and AFTER are two compiled blockx binaries (e.g. a
# copy of dist/blockx built from the older commit, and dist/blockx). Rounds alternate between them
# (before, after, before, after, ...) so that the machine's drift and other load fall on both
# alike; each round runs bench/worker/run.ts (short) and bench/worker/backfill.ts --blocks 3000
# with the binary named by BLOCKX_BENCH_BINARY. It prints each round's figures, then the medians
# and the after/before ratios.
set -euo pipefail
cd "$(dirname "$0")/../.."
before="$(realpath "$1")"; after="$(realpath "$2")"; rounds="${3:-3}"
export PATH="$PWD/.cache/bun/node_modules/.bin:$PATH" BLOCKX_ETCD_BIN="$PWD/.cache/etcd/root/usr/bin/etcd"
out="$(mktemp -d)"
for r in $(seq 1 "$rounds"); do
  for which in before after; do
    bin="$before"; [ "$which" = after ] && bin="$after"
    BLOCKX_BENCH_BINARY="$bin" bun bench/worker/run.ts --tasks 500 --warmup 500 --seconds 3 > "$out/run-$which-$r.txt"
    BLOCKX_BENCH_BINARY="$bin" bun bench/worker/backfill.ts --blocks 3000 > "$out/backfill-$which-$r.txt"
    p50="$(grep -m1 '^| p50, concurrency 1' "$out/run-$which-$r.txt" | awk -F'|' '{print $4}' | tr -d ' ')"
    p99="$(grep -m1 '^| p99, concurrency 1' "$out/run-$which-$r.txt" | awk -F'|' '{print $4}' | tr -d ' ')"
    tps="$(grep -m1 '^| per second' "$out/run-$which-$r.txt" | awk -F'|' '{print $4}' | awk '{print $1}')"
    # backfill.ts's row of the default (mapped) hand-off: | mapped | blocks/s | vs floor | Worker | executors | total | ...
    mapped="$(grep -m1 '^| mapped |' "$out/backfill-$which-$r.txt")"
    bps="$(awk -F'|' '{print $3}' <<<"$mapped" | tr -d ' ')"
    ratio="$(awk -F'|' '{print $4}' <<<"$mapped" | tr -d ' x')"
    cpu="$(awk -F'|' '{print $7}' <<<"$mapped" | tr -d ' ')"
    echo "$which $r p50=$p50 p99=$p99 tasks/s=$tps blocks/s=$bps floor-ratio=$ratio cpu-ms/block=$cpu" | tee -a "$out/rows.txt"
  done
done
echo
echo "medians over $rounds rounds (after / before):"
for key in p50 p99 tasks/s blocks/s floor-ratio cpu-ms/block; do
  med() { grep "^$1 " "$out/rows.txt" | tr ' ' '\n' | grep "^$key=" | cut -d= -f2 | sed 's/ms$//;s/µs$//' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  b="$(med before)"; a="$(med after)"
  awk -v k="$key" -v b="$b" -v a="$a" 'BEGIN { printf "  %-13s before %-10s after %-10s ratio %.2f\n", k, b, a, (b > 0 ? a / b : 0) }'
done
echo "(raw outputs in $out)"
