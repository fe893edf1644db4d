#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs clang-tidy (checks in .clang-tidy) on our own .cc files, using BUILD/compile_commands.json.
# Generated protobuf code and third-party headers are not ours and are not checked.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cc' | grep -v '^tests/fuzz/')
echo "$files" | xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option 2>/dev/null
