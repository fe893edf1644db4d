#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# promtool on the rules (check + unit tests), the PrometheusRule in sync with the rules file,
# the plain scrape config, check_rules.mjs (runbook links, a firing and a silent case per alert,
# node labels, inhibition labels, critical findings, metric names), operator_labels.mjs (the
# rules on the label shapes the Prometheus Operator's settings give the series) and
# check_sizing.mjs (docs/sizing.md's counts and drop rules).
set -euo pipefail
src="${EFAWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)}"
prom="$src/deploy/prometheus"
command -v promtool >/dev/null || { echo "promtool not found: run scripts/setup.sh" >&2; exit 1; }
promtool check rules "$prom/efawatch-rules.yml"
(cd "$prom" && promtool test rules efawatch-rules.test.yml)
"$prom/gen-prometheusrule.sh" --check

# Debian's Prometheus is built without Kubernetes service discovery, so the config is checked
# with static targets in place of kubernetes_sd_configs; everything else is the file as shipped.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp "$prom/efawatch-rules.yml" "$tmp/"
awk '/^    kubernetes_sd_configs:/ { print "    static_configs:"; print "      - targets: [\"127.0.0.1:9477\"]"; skip = 1; next }
     skip && /^      / { next }
     { skip = 0; print }' "$prom/prometheus.yml" >"$tmp/prometheus.yml"
grep -q 'static_configs' "$tmp/prometheus.yml"
promtool check config "$tmp/prometheus.yml"

node "$src/tests/deploy/checks/check_rules.mjs" "$src"
node "$src/tests/deploy/checks/operator_labels.mjs" "$src"
node "$src/tests/deploy/checks/check_sizing.mjs" "$src"
