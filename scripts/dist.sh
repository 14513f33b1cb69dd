#!/usr/bin/env bash
# dist.sh OUTDIR [TARGET...]: the release archives blockx-<version>-<target>.tar.gz (default targets
# linux-x64 and linux-arm64) and SHA256SUMS in OUTDIR. Each archive holds the binary, deploy/systemd
# (units, environment files, chains.json), README-operations.md (the README's operations part),
# LICENSE (Apache-2.0) and THIRD-PARTY-LICENSES.md. Reproducible: the build date is SOURCE_DATE_EPOCH
# or the commit's time, file times, owners and order in the tar are fixed and gzip stores no name or
# time, so two runs on one commit give identical archives. `make deps` fetches each target's Bun runtime into .cache/bun-targets.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
out=$(realpath -m "$1")
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(linux-x64 linux-arm64)
export PATH="$repo/.cache/bun/node_modules/.bin:$PATH"

version=$(sed -n 's/^  "version": "\([^"]*\)",$/\1/p' package.json)
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
# BLOCKX_COMMIT when set (the release test pins one commit for its two builds), else HEAD's.
export BLOCKX_COMMIT=${BLOCKX_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
export BLOCKX_SOURCE_DIGEST=$(make -s --no-print-directory source-digest)
export BLOCKX_BUILD_DATE=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$out"
for target in "${targets[@]}"; do
  case "$target" in linux-x64 | linux-arm64) ;; *) echo "dist.sh: unknown target $target (linux-x64, linux-arm64)" >&2; exit 2 ;; esac
  runtime="$repo/.cache/bun-targets/$target/bun"
  [ -x "$runtime" ] || { echo "dist.sh: $runtime is missing: run make deps" >&2; exit 2; }
  name="blockx-$version-$target"
  dir="$stage/$name"
  mkdir -p "$dir/systemd"
  ./scripts/compile.sh "$dir/blockx" "$target" "$runtime" >/dev/null
  cp deploy/systemd/* "$dir/systemd/"
  # The README's operations part: every span between the markers, in order.
  { echo "# BlockX $version: operations (from README.md)"; echo; awk '/<!-- operations:begin -->/{on=1; next} /<!-- operations:end -->/{on=0; print ""; next} on' README.md; } >"$dir/README-operations.md"
  cp LICENSE THIRD-PARTY-LICENSES.md "$dir/"
  chmod 0755 "$dir" "$dir/systemd" "$dir/blockx"
  find "$dir" -type f ! -name blockx -exec chmod 0644 {} +
  tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=gnu -C "$stage" -cf - "$name" | gzip -n -6 >"$out/$name.tar.gz.tmp"
  mv "$out/$name.tar.gz.tmp" "$out/$name.tar.gz"
  echo "$out/$name.tar.gz"
done
(cd "$out" && sha256sum blockx-"$version"-*.tar.gz >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
echo "$out/SHA256SUMS"
