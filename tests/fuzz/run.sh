#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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
cmake --build "$build" --target fuzz_nccl_analyzer fuzz_block_scanner fuzz_comm_line \
  fuzz_pod_logs fuzz_checkpoint fuzz_inspector -j "${EFAWATCH_JOBS:-2}"
# The pod log targets write a small log tree per input: on tmpfs they run about 3x faster.
if [ -z "${TMPDIR:-}" ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# New inputs go to a scratch corpus per target; the fixtures are read-only seeds.
run() {
  local target=$1 seeds=$2 max_len=$3
  mkdir -p "$work/$target"
  "$build/fuzz/$target" -max_total_time="$secs" -max_len="$max_len" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/$target-" "$work/$target" \
    "$seeds"
}
run fuzz_nccl_analyzer "$root/tests/fixtures/nccl" 16384
run fuzz_block_scanner "$root/tests/fixtures/nccl" 16384
run fuzz_comm_line "$root/tests/fuzz/nccl/comm_line_seeds" 4096
run fuzz_pod_logs "$root/tests/fixtures/nccl" 16384
run fuzz_checkpoint "$root/tests/fuzz/logs/checkpoint_seeds" 8192
run fuzz_inspector "$root/tests/fixtures/inspector" 16384
