#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source file the repository tracks names its license in one of its first three lines
# (`SPDX-License-Identifier: Apache-2.0`, after a shebang where there is one), and LICENSE holds
# the Apache License 2.0 those lines refer to. Fixture files (tests/fixtures) are data, not source.
#
# Usage: check_spdx.sh [DIR]      check the git work tree DIR (default: this repository)
#        check_spdx.sh --self-test  show that a file without the line fails the check
# Exit 0: all files carry it; 1: the files that do not, one a line; 77: DIR is not a git work tree.
set -euo pipefail
id="SPDX-License-Identifier: Apache-2.0"
# The kinds of files that are source: C++, protobuf, CMake, shell, Python, JavaScript.
patterns=('*.cc' '*.h' '*.proto' '*.in' '*.cmake' 'CMakeLists.txt' '*/CMakeLists.txt' '*.sh' '*.py'
  '*.mjs' '.ci/run' 'deploy/Dockerfile')

check() {
  local dir=$1 missing=0 f
  git -C "$dir" rev-parse --is-inside-work-tree >/dev/null 2>&1 || {
    echo "check_spdx: $dir is not a git work tree: skipped"
    return 77
  }
  if ! grep -q "Apache License" "$dir/LICENSE" 2>/dev/null ||
    ! grep -q "Version 2.0, January 2004" "$dir/LICENSE"; then
    echo "LICENSE: missing or not the Apache License 2.0"
    missing=1
  fi
  # One awk over every file (a process per file took 40 s on a busy CI machine).
  local report
  report=$(cd "$dir" && git ls-files -z -- "${patterns[@]}" ':!:tests/fixtures/*' |
    xargs -0 -r awk -v id="$id" '
      FNR == 1 { if (prev != "" && !ok) print prev; prev = FILENAME; ok = 0 }
      FNR <= 3 && index($0, id) { ok = 1 }
      END { if (prev != "" && !ok) print prev }')
  while IFS= read -r f; do
    [[ -n $f ]] || continue
    echo "$f: no '$id' in its first 3 lines"
    missing=1
  done <<<"$report"
  return "$missing"
}

self_test() {
  local tmp rc=0 out
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  git -C "$tmp" init -q
  printf 'Apache License\nVersion 2.0, January 2004\n' >"$tmp/LICENSE"
  printf '// %s\nint a;\n' "$id" >"$tmp/good.cc"
  printf '#!/bin/sh\n# %s\n' "$id" >"$tmp/good.sh"
  printf 'int b;\n' >"$tmp/bad.cc"
  mkdir -p "$tmp/tests/fixtures" && printf 'data\n' >"$tmp/tests/fixtures/x.py"
  git -C "$tmp" add -A
  out=$(check "$tmp") || rc=$?
  if [[ $rc -ne 1 || $out != "bad.cc: no '$id' in its first 3 lines" ]]; then
    echo "self-test: want exactly bad.cc reported (exit 1), got exit $rc: $out"
    return 1
  fi
  rm "$tmp/bad.cc" && git -C "$tmp" add -A
  out=$(check "$tmp") || { echo "self-test: a clean tree failed: $out"; return 1; }
  echo "self-test: a file without the identifier fails, a clean tree passes"
}

if [[ ${1:-} == --self-test ]]; then
  self_test
else
  dir=${1:-$(cd "$(dirname "$0")/../../.." && pwd)}
  rc=0
  check "$dir" || rc=$?
  ((rc == 0)) && echo "check_spdx: every tracked source file carries '$id'"
  exit "$rc"
fi
