#!/usr/bin/env bash
# compile.sh OUTFILE [TARGET RUNTIME]: compiles the blockx binary (src/main.ts, the executor's
# .py files and blockx-py's embedded; src/outputs/stores/sqlite-thread.ts and
# src/runtime/chains/localtestservice/synthetic-chain-thread.ts are more entries: the SQLite table
# store's and the synthetic chain's Worker threads, which Bun can only start from an entry of the
# binary; src/common/threads/thread-entry.ts finds them) to OUTFILE. TARGET (linux-x64, linux-arm64) cross-compiles with RUNTIME, the
# target's Bun executable (`make dist` fetches it from the npm registry), instead of letting Bun
# download it. Reads BLOCKX_COMMIT and BLOCKX_SOURCE_DIGEST; BLOCKX_BUILD_DATE defaults to now.
# The output is a pure function of the sources, these values and OUTFILE's base name (Bun embeds
# it), which is what makes `make dist` reproducible.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
target=${2:-}
runtime=${3:-}
: "${BLOCKX_COMMIT:?}" "${BLOCKX_SOURCE_DIGEST:?}"
date=${BLOCKX_BUILD_DATE:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}
cross=()
if [ -n "$target" ]; then cross=(--target="bun-$target" --compile-executable-path="$runtime"); fi
find executor-py client-py/blockx -name __pycache__ -prune -exec rm -rf {} +
bun build --compile --minify --bytecode --format=esm \
  --no-compile-autoload-dotenv --no-compile-autoload-bunfig "${cross[@]}" \
  --define "BLOCKX_BUILD_COMMIT=\"$BLOCKX_COMMIT\"" \
  --define "BLOCKX_SOURCE_DIGEST=\"$BLOCKX_SOURCE_DIGEST\"" \
  --define "BLOCKX_BUILD_DATE=\"$date\"" \
  --asset executor-py/blockx_executor --asset client-py \
  src/main.ts src/outputs/stores/sqlite-thread.ts src/outputs/stores/parquet-thread.ts src/runtime/chains/localtestservice/synthetic-chain-thread.ts --outfile "$out"
