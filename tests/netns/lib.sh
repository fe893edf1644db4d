# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Shared by the network-namespace test scripts; source it after `set -euo pipefail`.

# Exit codes ctest reads: 77 is "skipped" (SKIP_RETURN_CODE), 1 a failure.
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

# Skips unless this runs as root with iproute2's `ip netns`, and every "command:why" given is
# installed, e.g. require_netns "python3:reads the tool's JSON".
require_netns() {
  [[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces)"
  command -v ip >/dev/null || skip "iproute2 'ip' not installed"
  local need
  for need in "$@"; do
    command -v "${need%%:*}" >/dev/null || skip "${need%%:*} not installed (${need#*:})"
  done
  ip netns list >/dev/null 2>&1 || skip "'ip netns' unavailable"
}

# Waits poll against a deadline instead of sleeping a fixed time: a loaded host (tests run next
# to builds) can take seconds for what takes milliseconds on an idle one.
deadline_after() { echo $(($(date +%s%N) / 1000000 + $1)); }
before() { (($(date +%s%N) / 1000000 < $1)); }
