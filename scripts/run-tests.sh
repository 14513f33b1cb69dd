#!/usr/bin/env bash
# Runs every test with bun test and ends with the plain "N passed, N failed, N skipped" line CI
# reads (skips and todos are counted, never hidden). Keeps bun's exit code. Extra arguments go to
# bun test (e.g. a path filter). When a test fails, each failed test is named once more just above
# that line, with the start of its error, so the short tail CI keeps shows why.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.cache/bun/node_modules/.bin:$PATH"
export BLOCKX_ETCD_BIN="${BLOCKX_ETCD_BIN:-$PWD/.cache/etcd/root/usr/bin/etcd}"
log="$(mktemp)"
bun test --timeout 120000 "$@" 2>&1 | tee "$log"
code=${PIPESTATUS[0]}
passed=$(grep -E '^ *[0-9]+ pass$' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)
failed=$(grep -E '^ *[0-9]+ fail$' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)
skipped=$(grep -E '^ *[0-9]+ skip$' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)
todo=$(grep -E '^ *[0-9]+ todo$' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)
if [ "$code" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
if [ "$failed" -gt 0 ]; then
  # CI shows only the output's last lines: name each failed test once, with the first lines of its error.
  echo "failed tests and errors, with the start of each:"
  awk -v max=6 '
    /\.test\.[jt]sx?:$/ { file = $0; n = 0; next }
    /^# Unhandled error/ { unhandled = 1; n = 0; next }
    unhandled && /^error/ { print "  (error outside a test) " file; print "      " substr($0, 1, 300); unhandled = 0; n = 0; next }
    /^\((pass|skip|todo)\)/ { n = 0; next }
    /^\(fail\)/ {
      if (!seen[$0]++) {
        print "  " $0; c = 0; on = 0
        for (i = 0; i < n && c < max; i++) {
          if (buf[i] ~ /^error/) on = 1
          if (on && buf[i] != "") { print "      " substr(buf[i], 1, 300); c++ }
        }
      }
      n = 0; next
    }
    { buf[n++] = $0 }
  ' "$log" | head -40
fi
rm -f "$log"
echo "${passed} passed, ${failed} failed, $((skipped + todo)) skipped"
exit "$code"
