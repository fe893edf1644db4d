#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fuzz step of CI, deterministic: every libFuzzer target under ASan+UBSan
#   1. replays its seeds (the fixtures) and every committed regression input
#      (tests/fuzz/regressions/<target>/: past crashes and what exploration found), then
#   2. mutates them for a fixed number of runs from a fixed seed (-seed=1 -runs=N).
# The same commit gives the same inputs on every machine, so a change fails on its own inputs,
# never on a bug a random exploration happened to find while it was landing. Exploring for new
# bugs is tests/fuzz/explore.sh, run outside CI (README.md, "Development").
# Configures and builds build-fuzz/ when needed. Exit status is libFuzzer's (non-zero on a crash,
# leak, sanitizer report or timeout).
# Usage: tests/fuzz/run.sh [RUNS]   (mutations per target; default: each target's own, targets.sh)
set -euo pipefail
runs_override=${1:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/fuzz/targets.sh
. "$root/tests/fuzz/targets.sh"
fuzz_build
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for entry in "${fuzz_targets[@]}"; do
  read -r target seeds max_len runs <<<"$entry"
  runs=${runs_override:-$runs}
  regressions="$root/tests/fuzz/regressions/$target"
  inputs=("$seeds")
  [ -d "$regressions" ] && inputs+=("$regressions")
  echo "fuzz: $target: replay"
  # Files given one by one are run once each, no mutation.
  find "${inputs[@]}" -type f -print0 | sort -z |
    xargs -0 "$build/fuzz/$target" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
      -artifact_prefix="$work/$target-" >"$work/$target.replay.log" 2>&1 ||
    { tail -50 "$work/$target.replay.log"; exit 1; }
  echo "fuzz: $target: $runs runs from seed 1"
  mkdir -p "$work/$target"
  "$build/fuzz/$target" -seed=1 -runs="$runs" -max_len="$max_len" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/$target-" "$work/$target" \
    "${inputs[@]}"
done
