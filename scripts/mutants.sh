#!/usr/bin/env bash
# Mutation check: each test/mutants/NAME.patch breaks one promise on purpose (its first line says
# which; its `run:` line names the tests that must catch it). For each, in a throwaway worktree of
# the current tree (uncommitted changes included): apply the patch, rebuild when it touches the
# binary's sources, run those tests, and expect them to FAIL. A mutant the tests let pass survives,
# and this exits 1. `make mutants` runs every patch; arguments pick some by name.
set -uo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
rev="$(git stash create)"; rev="${rev:-HEAD}"   # the tree as it is now, without touching it
names=("$@")
if [ ${#names[@]} -eq 0 ]; then for p in test/mutants/*.patch; do names+=("$(basename "$p" .patch)"); done; fi
killed=0; survived=0; broken=0
for name in "${names[@]}"; do
  patch="$repo/test/mutants/$name.patch"
  what="$(head -1 "$patch")"
  run="$(grep -m1 '^run: ' "$patch" | cut -c6-)"
  tree="$(mktemp -d)/tree"
  git worktree add -q --detach "$tree" "$rev"
  ln -s "$repo/.cache" "$tree/.cache"; ln -s "$repo/node_modules" "$tree/node_modules"
  echo "== $name: $what"
  if ! git -C "$tree" apply "$patch"; then
    echo "   BROKEN: the patch no longer applies (update it to the code)"; broken=$((broken + 1))
  else
    log="$tree/mutant.log"
    # The worktree has no dist/: a mutant of the binary's sources is built; any other gets the
    # current binary when it was built from these same sources (else built too), so that its
    # process tests fail for the mutant, not for a missing binary.
    want="$(make -C "$tree" -s --no-print-directory source-digest 2>/dev/null)"
    if ! git -C "$tree" diff --name-only | grep -qE '^(src/|executor-py/blockx_executor/|package.json)' \
       && [ -x "$repo/dist/blockx" ] && "$repo/dist/blockx" version 2>/dev/null | grep -q "sources $want"; then
      mkdir -p "$tree/dist" && cp "$repo/dist/blockx" "$tree/dist/blockx"
    else
      make -C "$tree" -s -o node_modules/.blockx-deps-stamp build >"$log" 2>&1 || { echo "   BROKEN: the mutant does not build"; broken=$((broken + 1)); }
    fi
    # shellcheck disable=SC2086
    (cd "$tree" && ./scripts/run-tests.sh $run) >>"$log" 2>&1
    code=$?
    if [ "$code" -ne 0 ]; then
      killed=$((killed + 1))
      echo "   KILLED by:"; grep -E '^\(fail\)' "$log" | sort -u | sed 's/ \[[0-9.]*m\?s\]$//; s/^/     /' | head -12
    else
      survived=$((survived + 1)); echo "   SURVIVED: $(tail -1 "$log")"
    fi
  fi
  git worktree remove --force "$tree"; rm -rf "$(dirname "$tree")"
done
echo "mutants: ${killed} killed, ${survived} survived, ${broken} broken"
[ "$survived" -eq 0 ] && [ "$broken" -eq 0 ]
