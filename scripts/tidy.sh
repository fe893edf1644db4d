#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs clang-tidy (checks in .clang-tidy) on our own .cc files, using BUILD/compile_commands.json.
# Generated protobuf code and third-party headers are not ours and are not checked.
# A file whose preprocessed text, compile command, .clang-tidy and clang-tidy version are those of
# an earlier clean run is skipped: scripts/tidy_cache.py keeps that cache outside the clone
# (~/.cache/efawatch-tidy; EFAWATCH_TIDY_CACHE=off analyses every file).
# Usage: scripts/tidy.sh [BUILD] [FILE...]   (default: build, every tracked .cc)
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
shift || true
if (($# > 0)); then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.cc' | grep -v '^tests/fuzz/')
fi
exec python3 scripts/tidy_cache.py "$build" "${files[@]}"
