#!/usr/bin/env bash
# What a new user sees: a fresh clone of this checkout's HEAD, in a temporary folder, runs `make demo`
# on a PATH without bubblewrap (a link to every other command of PATH), with nothing of this checkout's
# .cache or node_modules (Bun, the npm packages, etcd and bubblewrap are fetched again: npm's registry
# and Debian's archive). Passes when the demo prints its rows. DEMO_BLOCKS as for `make demo`
# (default here 18000000..18000299); KEEP=1 keeps the clone. Run as root or as any user who can
# write TMPDIR (apt-get download needs apt's package lists present, as for `make demo`).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/blockx-fresh-XXXXXX")"
cleanup() { [ "${KEEP:-0}" = 1 ] && echo "kept $work" || rm -rf "$work"; }
trap cleanup EXIT
# Through a bundle of HEAD: the checkout may belong to another user, whose repository git refuses to
# clone from (safe.directory is not passed on to the clone's upload-pack); a bundle is read in-process.
git -c safe.directory="*" -C "$here" bundle create --quiet "$work/head.bundle" HEAD
git -c advice.detachedHead=false clone --quiet "$work/head.bundle" "$work/blockx"
mkdir "$work/path"
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -d "$d" ] || continue
  for f in "$d"/*; do
    n="$(basename "$f")"
    [ "$n" = bwrap ] || [ -e "$work/path/$n" ] || ln -s "$f" "$work/path/$n"
  done
done
echo "== fresh clone of $(git -C "$work/blockx" rev-parse --short HEAD) in $work/blockx; bwrap on PATH: $(PATH="$work/path" command -v bwrap || echo none)"
cd "$work/blockx"
PATH="$work/path" DEMO_BLOCKS="${DEMO_BLOCKS:-18000000..18000299}" make demo 2>&1 | tee "$work/demo.log"
grep -qE '^18000000 +[0-9]+' "$work/demo.log" || { echo "FAILED: the demo printed no rows" >&2; exit 1; }
grep -q '^== done' "$work/demo.log" || { echo "FAILED: the demo did not finish" >&2; exit 1; }
echo "== passed: a fresh clone's make demo, without bubblewrap installed, printed its rows"
