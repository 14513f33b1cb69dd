#!/usr/bin/env bash
# `make demo`: the local cluster (`blockx dev`), the block-statistics example over a few thousand
# blocks of the local test chain with a live progress display, the first rows of its table, and
# everything stopped again. Variables: DEMO_BLOCKS (default 18000000..18002999), DEMO_DIR (the dev
# dir, kept afterwards; default a temporary one that blockx dev removes when it stops).
set -euo pipefail
cd "$(dirname "$0")/.."
BLOCKX="$PWD/dist/blockx"
BLOCKS="${DEMO_BLOCKS:-18000000..18002999}"
FUNCTION="examples/block-stats/block_stats.py"
TABLE=block_stats

dev_out="$(mktemp /tmp/blockx-demo-dev.XXXXXX)"
dev_pid=""
stop_dev() {
  if [ -n "$dev_pid" ] && kill -0 "$dev_pid" 2>/dev/null; then
    echo "== stopping blockx dev (SIGINT, as Ctrl-C would)"
    kill -INT "$dev_pid" 2>/dev/null || true
    wait "$dev_pid" 2>/dev/null || true
  fi
  rm -f "$dev_out"
}
trap stop_dev EXIT
trap 'exit 130' INT TERM

echo "== starting blockx dev"
# DEV_DIR empty: dev makes a temporary directory and removes it when it stops.
DEV_DIR="${DEMO_DIR:-}" DEV_WORKERS="${DEV_WORKERS:-2}" DEV_BUNDLE_WORKERS="${DEV_BUNDLE_WORKERS:-1}" "$BLOCKX" dev >"$dev_out" &
dev_pid=$!
for _ in $(seq 1 600); do
  grep -q '"msg":"dev ready"' "$dev_out" 2>/dev/null && break
  if ! kill -0 "$dev_pid" 2>/dev/null; then echo "blockx dev exited before it was ready (see its messages above)" >&2; exit 1; fi
  sleep 0.2
done
grep -q '"msg":"dev ready"' "$dev_out" || { echo "blockx dev was not ready within 120 s" >&2; exit 1; }
env_file="$(sed -n 's/.*"envFile":"\([^"]*\)".*/\1/p' "$dev_out" | head -1)"
# shellcheck disable=SC1090
source "$env_file"

echo "== blockx submit --function $FUNCTION --entry main --blocks $BLOCKS --chain ethereum --table $TABLE --watch"
"$BLOCKX" submit --function "$FUNCTION" --entry main --blocks "$BLOCKS" --chain ethereum --table "$TABLE" --watch
echo "== blockx table $TABLE --limit 10 --order block"
"$BLOCKX" table "$TABLE" --limit 10 --order block
echo "== done"
