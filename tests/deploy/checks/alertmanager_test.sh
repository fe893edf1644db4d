#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deploy/prometheus/alertmanager.yml: `amtool check-config`, then a real Alertmanager with it
# inhibits what it should (alertmanager_inhibit.mjs says what).
set -euo pipefail
src="${EFAWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)}"
here="$src/tests/deploy/checks"
for tool in amtool node; do
  command -v "$tool" >/dev/null || { echo "$tool not found: run scripts/setup.sh" >&2; exit 1; }
done
am="$(command -v alertmanager || command -v prometheus-alertmanager || true)"
[ -n "$am" ] || { echo "alertmanager not found: run scripts/setup.sh" >&2; exit 1; }
[ -d "$here/node_modules/yaml" ] ||
  { echo "tests/deploy/checks/node_modules missing: run scripts/setup.sh" >&2; exit 1; }
amtool check-config "$src/deploy/prometheus/alertmanager.yml"
# The routing the file promises: a job's critical alert pages, a deliberate one is a ticket.
route() { amtool config routes test --config.file="$src/deploy/prometheus/alertmanager.yml" "$@" 2>/dev/null; }
# A job's alerts go to its namespace's owners; node faults to the platform.
[ "$(route alertname=EfawatchNcclTcpFallback severity=critical scope=workload namespace=team-a)" = team-a ]
[ "$(route alertname=EfawatchNcclCollectiveTimeout severity=critical scope=workload namespace=team-b-dev)" = team-b ]
[ "$(route alertname=EfawatchNcclCollectiveTimeout severity=critical scope=workload namespace=other)" = efawatch-jobs ]
[ "$(route alertname=EfawatchNcclTcpDeliberate severity=info scope=workload namespace=other)" = efawatch-ticket ]
# ... unless a node fault explains it: then the platform's route (where the node's page inhibits it).
[ "$(route alertname=EfawatchNcclCollectiveTimeout severity=critical scope=workload namespace=team-a fault_node=n1)" = efawatch-page ]
[ "$(route alertname=EfawatchEfaDeviceMissing severity=critical scope=node)" = efawatch-page ]
[ "$(route alertname=EfawatchEfaErrorsRising severity=warning scope=node)" = efawatch-chat ]
[ "$(route alertname=EfawatchEfaIdleTcpBusy severity=warning scope=workload namespace=team-a)" = team-a ]
node "$here/alertmanager_inhibit.mjs" "$src" "$am"
