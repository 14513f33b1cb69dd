#!/usr/bin/env bash
# bench/io/without-decode.sh [ROUNDS]: how far the IO-bound full-block call (bench/io/io-bound.ts,
# 16 in flight, 10 ms per call) could get if its executor did not decode the block at all: the
# ceiling of any faster decode (another format, a lazy one) on this machine. It builds a probe
# binary from the current tree (uncommitted changes included) with bench/io/without-decode.patch
# applied (a mapped block comes back as its number alone: the call's function reads nothing else;
# the block's bytes are still read from the store), in a throwaway worktree, then runs io-bound.ts
# with that binary as the baseline, in the same interleaved rounds as dist/blockx (`make build`
# first). "baseline" rows are the probe's.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"; rounds="${1:-7}"
export PATH="$repo/.cache/bun/node_modules/.bin:$PATH" BLOCKX_ETCD_BIN="$repo/.cache/etcd/root/usr/bin/etcd"
[ -x dist/blockx ] || { echo "without-decode.sh: no dist/blockx: run make build first" >&2; exit 2; }
rev="$(git stash create)"; rev="${rev:-HEAD}"   # the tree as it is now, without touching it
work="$(mktemp -d)"; tree="$work/tree"
trap 'git -C "$repo" worktree remove --force "$tree" 2>/dev/null; rm -rf "$work"' EXIT
git worktree add -q --detach "$tree" "$rev"
ln -s "$repo/.cache" "$tree/.cache"; ln -s "$repo/node_modules" "$tree/node_modules"
git -C "$tree" apply "$repo/bench/io/without-decode.patch"
make -C "$tree" -s -o node_modules/.blockx-deps-stamp build >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
cp "$tree/dist/blockx" "$work/blockx-without-decode"
bun bench/io/io-bound.ts --inflight 16 --answers full-block --rounds "$rounds" --baseline "$work/blockx-without-decode" 2>&1 | grep -v '^round '
echo
echo "baseline = the same build whose executors skip the block's decode (bench/io/without-decode.patch): the ceiling of a faster decode"
