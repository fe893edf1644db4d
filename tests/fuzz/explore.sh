#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Explores for new bugs, outside CI: each libFuzzer target (or the ones named) for SECONDS with a
# random seed, from the seeds, the regression inputs and a corpus kept between runs in
# build-fuzz/corpus/<target>. A crash is written to tests/fuzz/regressions/<target>/: fix the bug,
# then commit the input with the fix, and CI replays it from then on (tests/fuzz/run.sh).
# Usage: tests/fuzz/explore.sh SECONDS [TARGET...]
set -euo pipefail
secs=${1:?usage: tests/fuzz/explore.sh SECONDS [TARGET...]}
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/fuzz/targets.sh
. "$root/tests/fuzz/targets.sh"
fuzz_build
status=0
for entry in "${fuzz_targets[@]}"; do
  read -r target seeds max_len _ <<<"$entry"
  if (($#)) && [[ " $* " != *" $target "* ]]; then continue; fi
  regressions="$root/tests/fuzz/regressions/$target"
  mkdir -p "$build/corpus/$target" "$regressions"
  "$build/fuzz/$target" -max_total_time="$secs" -max_len="$max_len" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$regressions/" \
    "$build/corpus/$target" "$seeds" "$regressions" || status=$?
done
exit "$status"
