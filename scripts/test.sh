#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Quick start (b): install, build and run every check and test. This is what CI runs.
#   1. packages   2. clang-format   3. build with warnings as errors   4. clang-tidy
#   5. all tests (ctest, every label, each with a timeout)   6. unit tests under ASan+UBSan
#   7. unit and component tests under ThreadSanitizer
#   8. every fuzz target: its regression inputs replayed, then fixed-seed runs (deterministic)
# Each step prints its duration; a summary of them all ends the run.
# Build folders: build/ (main), build-asan/, build-tsan/, build-fuzz/; all incremental on a
# second run.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# Each step's duration is printed when it ends, and all of them again at the end (also when a
# step fails), so a slow CI run shows where its time went.
step_name="" step_start=$SECONDS total_start=$SECONDS
durations=()
step_done() {
  [[ -n $step_name ]] || return 0
  local s=$((SECONDS - step_start))
  durations+=("$(printf '%5d s  %s' "$s" "$step_name")")
  printf '<== %s: %d s\n' "$step_name" "$s"
  step_name=""
}
summary() {
  local rc=$?
  step_done
  printf '\n==> durations (total %d s%s)\n' $((SECONDS - total_start)) "$( ((rc == 0)) || echo ", failed")"
  printf '%s\n' "${durations[@]}"
}
trap summary EXIT
step() {
  step_done
  step_name=$* step_start=$SECONDS
  printf '\n==> %s\n' "$*"
}

step "packages"
scripts/setup.sh

step "clang-format"
git ls-files '*.cc' '*.h' | xargs clang-format --dry-run --Werror

step "build (warnings as errors)"
cmake -S . -B build -G Ninja -DEFAWATCH_WERROR=ON -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build build -j"$jobs"

step "clang-tidy"
scripts/tidy.sh build

step "tests"
(cd build && ctest --output-on-failure -j"$jobs" --timeout 300)

step "unit tests under ASan+UBSan"
cmake -S . -B build-asan -G Ninja -DEFAWATCH_SANITIZE=address,undefined -DEFAWATCH_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build build-asan --target tests_unit -j"$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -L unit -j"$jobs" --timeout 300)

step "unit and component tests under ThreadSanitizer"
# -O1 -g1: TSan's reports need line tables, not full debug information, which costs compile
# time on CI's two cores. ASLR off for the run (setarch -R): TSan's shadow memory layout refuses
# some kernels' randomized mappings. grpc_edge_test is left out: the callback handlers gRPC's
# headers compile into it order their memory through gRPC's own library, which is not
# instrumented, so TSan reports races inside grpc::internal that cannot happen.
cmake -S . -B build-tsan -G Ninja -DEFAWATCH_SANITIZE=thread -DEFAWATCH_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -g1" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build build-tsan --target tests_unit tests_component -j"$jobs"
(cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  setarch "$(uname -m)" -R ctest --output-on-failure -L 'unit|component' -E '^grpc_edge_test$' \
  -j"$jobs" --timeout 600)

step "fuzz (deterministic: regression inputs, then fixed-seed runs; ASan+UBSan)"
EFAWATCH_FUZZ_BUILD="$PWD/build-fuzz" tests/fuzz/run.sh

step_done
printf '\n==> all checks passed\n'
