#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Quick start (b): install, build and run every check and test. This is what CI runs.
#   1. packages   2. clang-format   3. build with warnings as errors   4. clang-tidy
#   5. all tests (ctest, every label, each with a timeout)   6. unit tests under ASan+UBSan
#   7. every fuzz target: its regression inputs replayed, then fixed-seed runs (deterministic)
# Build folders: build/ (main), build-asan/, build-fuzz/; all incremental on a second run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)
step() { printf '\n==> %s\n' "$*"; }

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

step "fuzz (deterministic: regression inputs, then fixed-seed runs; ASan+UBSan)"
EFAWATCH_FUZZ_BUILD="$PWD/build-fuzz" tests/fuzz/run.sh

step "all checks passed"
