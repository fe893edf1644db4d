#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/tidy_cache.py, with a fake clang-tidy on a two-file project: a clean file is analysed
# once and then skipped until its content (or an included header, .clang-tidy, the clang-tidy
# version) changes; a failing file is analysed again on every run and fails every run.
set -euo pipefail
script=$(cd "$(dirname "$0")/../../.." && pwd)/scripts/tidy_cache.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir build
cat >fake-tidy <<'TIDY'
#!/usr/bin/env bash
if [[ $1 == --version ]]; then echo "fake clang-tidy ${FAKE_VERSION:-1}"; exit 0; fi
file=${*: -1}
echo "$file" >>"$LOG"
if grep -q BAD "$file"; then echo "$file:1:1: error: bad [fake-check]"; exit 1; fi
TIDY
chmod +x fake-tidy
echo 'Checks: "-*"' >.clang-tidy
echo 'inline int H() { return 1; }' >h.h
echo '#include "h.h"
int A() { return H(); }' >a.cc
echo 'int B() { return 2; } // BAD' >b.cc
cat >build/compile_commands.json <<JSON
[{"directory": "$work/build", "command": "c++ -std=c++20 -I$work -o a.o -c $work/a.cc", "file": "$work/a.cc"},
 {"directory": "$work/build", "command": "c++ -std=c++20 -I$work -o b.o -c $work/b.cc", "file": "$work/b.cc"}]
JSON
export CLANG_TIDY=$work/fake-tidy LOG=$work/log EFAWATCH_TIDY_CACHE=$work/cache
fail() { echo "FAIL: $*"; exit 1; }
run() { # run EXPECTED_RC: the files analysed, space-separated
  : >"$LOG"
  local rc=0
  python3 "$script" build a.cc b.cc >out 2>&1 || rc=$?
  [[ $rc == "$1" ]] || { cat out; fail "exit status $rc, expected $1"; }
  sort "$LOG" | tr '\n' ' ' | sed 's/ $//'
}
[[ $(run 1) == "a.cc b.cc" ]] || fail "first run: both files analysed"
grep -q "b.cc FAILED" out || fail "the failing file is reported"
[[ $(run 1) == "b.cc" ]] || fail "second run: the clean file is skipped, the failing one is not"
grep -q "1 unchanged" out || fail "the summary counts the skipped file"
echo 'int B() { return 2; }' >b.cc
[[ $(run 0) == "b.cc" ]] || fail "a fixed file is analysed"
[[ $(run 0) == "" ]] || fail "a warm run analyses nothing"
echo 'inline int H() { return 3; }' >h.h
[[ $(run 0) == "a.cc" ]] || fail "a changed header makes its includer analysed again"
[[ $(FAKE_VERSION=2 run 0) == "a.cc b.cc" ]] || fail "another clang-tidy version analyses all"
echo 'Checks: "-*,bugprone-*"' >.clang-tidy
[[ $(FAKE_VERSION=2 run 0) == "a.cc b.cc" ]] || fail "another .clang-tidy analyses all"
[[ $(EFAWATCH_TIDY_CACHE=off FAKE_VERSION=2 run 0) == "a.cc b.cc" ]] || fail "cache off"
echo "tidy cache: ok"
