#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each (default 60) under ASan+UBSan, seeded from the
# fixtures. Configures and builds build-fuzz/ when needed. Exit status is libFuzzer's (non-zero
# on a crash, leak, sanitizer report or timeout).
# Usage: tests/fuzz/run.sh [SECONDS]
set -euo pipefail
secs=${1:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${EFAWATCH_FUZZ_BUILD:-$root/build-fuzz}
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DEFAWATCH_FUZZ=ON \
    -DEFAWATCH_SANITIZE=address,undefined -DEFAWATCH_CUDA=OFF > /dev/null
fi
cmake --build "$build" --target fuzz_nccl_analyzer -j "${EFAWATCH_JOBS:-2}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# New inputs go to a scratch corpus; the fixtures are read-only seeds.
"$build/fuzz/fuzz_nccl_analyzer" -max_total_time="$secs" -max_len=16384 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/" "$work" \
  "$root/tests/fixtures/nccl"
