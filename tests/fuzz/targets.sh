# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/fuzz/run.sh and tests/fuzz/explore.sh: the libFuzzer targets, their seeds and
# input size limits, and the build of build-fuzz/ (ASan+UBSan, clang).
# shellcheck shell=bash
build=${EFAWATCH_FUZZ_BUILD:-$root/build-fuzz}
# target, seeds, largest input, and the fixed number of mutations CI runs (about 30 s each on a
# 2-core machine: the pod log target writes a log tree per input and is the slowest).
fuzz_targets=(
  "fuzz_nccl_analyzer $root/tests/fixtures/nccl 16384 20000"
  "fuzz_block_scanner $root/tests/fixtures/nccl 16384 40000"
  "fuzz_comm_line $root/tests/fuzz/nccl/comm_line_seeds 4096 40000"
  "fuzz_pod_logs $root/tests/fixtures/nccl 16384 3000"
  "fuzz_checkpoint $root/tests/fuzz/logs/checkpoint_seeds 8192 20000"
  "fuzz_inspector $root/tests/fixtures/inspector 16384 40000"
  "fuzz_request_head $root/tests/fuzz/export/request_head_seeds 4096 300000"
)
fuzz_build() {
  if [ ! -f "$build/build.ninja" ]; then
    CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DEFAWATCH_FUZZ=ON \
      -DEFAWATCH_SANITIZE=address,undefined -DEFAWATCH_CUDA=OFF >/dev/null
  fi
  local names=()
  for entry in "${fuzz_targets[@]}"; do names+=("${entry%% *}"); done
  cmake --build "$build" --target "${names[@]}" -j "${EFAWATCH_JOBS:-2}"
  # The pod log targets write a small log tree per input: on tmpfs they run about 3x faster.
  if [ -z "${TMPDIR:-}" ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
}
