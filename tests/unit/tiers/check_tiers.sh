#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tiers only depend downward: lib/ <- probes/ <- daemon/ and cli/ (docs/architecture.md).
# Fails, naming the file and line, when an #include or a CMake link points the other way, when a
# probe reaches into another probe for shared code, or when protobuf-generated headers leak into
# a tier that should hold plain C++ records, or a metric is named outside the metric table.
set -euo pipefail
src="${EFAWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)}"
cd "$src"
fail=0
bad() { echo "tier violation: $*" >&2; fail=1; }

# forbid DIR PATTERN WHY: no #include in DIR's sources matches PATTERN.
forbid() {
  local dir=$1 pattern=$2 why=$3 hit
  while IFS= read -r hit; do
    [ -n "$hit" ] && bad "$hit ($why)"
  done < <(grep -rnE --include='*.cc' --include='*.h' "^#include \"($pattern)" "$dir" || true)
}

forbid lib 'probes/|daemon/|cli/|tests/' 'lib/ is the bottom tier'
forbid lib 'proto/|grpc|efawatch/v1/' 'lib/ knows nothing of gRPC or protobuf'
forbid probes 'daemon/|cli/|tests/' 'probes/ sit below daemon/ and cli/'
forbid probes/collective 'probes/mesh/' 'shared code belongs in lib/'
forbid probes/mesh 'probes/collective/' 'shared code belongs in lib/'
forbid proto/codec 'daemon/|cli/|tests/' 'the API codec sits on lib/ and the probes records'
forbid daemon 'cli/|tests/' 'daemon/ and cli/ are separate top-tier programs'
forbid cli 'daemon/|tests/' 'daemon/ and cli/ are separate top-tier programs'

forbid probes '.*\.pb\.h' 'probes/ produce typed results; the gRPC edge converts (proto/codec)'

# CMake: a lib/ target links only lib/ targets; a probes/ target links no daemon/ or CLI target.
lib_targets=$(grep -rhoE 'add_library\((efawatch_[a-z_]+)' lib | sed 's/add_library(//' | sort -u)
daemon_targets=$(grep -rhoE 'add_library\((efawatch_[a-z_]+)' daemon cli | sed 's/add_library(//' | sort -u)
probe_targets=$(grep -rhoE 'add_library\((efawatch_[a-z_]+)' probes | sed 's/add_library(//' | sort -u)
for f in $(find lib -name CMakeLists.txt); do
  for t in $probe_targets $daemon_targets; do
    grep -qw "$t" "$f" && bad "$f links $t (lib/ is the bottom tier)"
  done
done
for f in $(find probes -name CMakeLists.txt); do
  for t in $daemon_targets; do
    grep -qw "$t" "$f" && bad "$f links $t (probes/ sit below daemon/ and cli/)"
  done
done
[ -n "$lib_targets" ] || bad "no lib/ targets found: is the layout what this check expects?"

# Metric names live in the metric table only; collectors name metrics by handle (metrics::M).
while IFS= read -r hit; do
  [ -n "$hit" ] && bad "$hit (a metric name outside lib/common/metric_table.*: use its metrics::M handle)"
done < <(grep -rn --include='*.cc' --include='*.h' '"efawatch_' lib probes daemon cli |
  grep -vE '^lib/common/metric_table\.(h|cc):' || true)

[ "$fail" -eq 0 ] && echo "tiers: lib <- probes <- daemon, cli: ok"
exit "$fail"
