#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One version (issue #46): `efawatchd --version`, `efawatch --version` (the front binary, which
# answers it without efawatch-rpc) and `efawatch version` (efawatch-rpc) all print CMake's
# project(VERSION) with the git revision of the build, and CHANGELOG.md has a section for it.
# Usage: version_test.sh EFAWATCHD EFAWATCH VERSION REVISION
set -euo pipefail
efawatchd=$1 efawatch=$2 version=$3 revision=$4
src=${EFAWATCH_SOURCE_DIR:?}
fail() { echo "FAIL: $*"; exit 1; }

want_d="efawatchd $version ($revision)"
got=$("$efawatchd" --version) || fail "efawatchd --version exited $?"
[[ $got == "$want_d" ]] || fail "efawatchd --version: '$got', want '$want_d'"

want="efawatch $version ($revision)"
got=$("$efawatch" --version) || fail "efawatch --version exited $?"
[[ $got == "$want"* ]] || fail "efawatch --version: '$got', want '$want, ...'"
got_rpc=$("$efawatch" version) || fail "efawatch version exited $?"
[[ $got_rpc == "$got" ]] || fail "efawatch version '$got_rpc' differs from --version '$got'"
# The front binary alone (copied into a training container without efawatch-rpc).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$efawatch" "$tmp/efawatch"
got_alone=$("$tmp/efawatch" --version) || fail "efawatch --version without efawatch-rpc exited $?"
[[ $got_alone == "$got" ]] || fail "efawatch --version alone: '$got_alone', want '$got'"

grep -qE "^## \[$version\] - [0-9]{4}-[0-9]{2}-[0-9]{2}$" "$src/CHANGELOG.md" ||
  fail "CHANGELOG.md has no '## [$version] - YYYY-MM-DD' section"
grep -qE '^## \[Unreleased\]$' "$src/CHANGELOG.md" || fail "CHANGELOG.md has no [Unreleased] section"
echo "version $version ($revision): efawatchd, efawatch, efawatch-rpc and CHANGELOG.md agree"
