#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Idle cost of the agent: starts efawatchd with its defaults on free ports, lets it idle for
# SECONDS (default 60) while Prometheus-style scrapes hit it every 15 s, and reports RSS and CPU.
# Targets: RSS < 30 MiB, CPU < 0.5% of one core.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
bin=${EFAWATCH_BIN:-build/bin/efawatchd}
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
"$bin" --metrics-listen=127.0.0.1:0 --grpc-listen=127.0.0.1:0 --port-file="$tmp/ports.json" \
  --pod-log-root="$tmp" --state-dir="$tmp" --log-level=warn &
pid=$!
for _ in $(seq 100); do [ -s "$tmp/ports.json" ] && break; sleep 0.1; done
mport=$(sed -E 's/.*"metrics": ([0-9]+).*/\1/' "$tmp/ports.json")
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
sleep 2  # let start-up settle; it is not idle cost
c0=$(cpu)
t0=$(date +%s.%N)
end=$(( $(date +%s) + secs ))
while [ "$(date +%s)" -lt "$end" ]; do
  curl -s "http://127.0.0.1:$mport/metrics" >/dev/null
  sleep 15 &
  wait $! || true
done
c1=$(cpu)
t1=$(date +%s.%N)
rss_kib=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
hwm_kib=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$ticks" -v rss="$rss_kib" -v hwm="$hwm_kib" 'BEGIN {
  cpu = (c1 - c0) / hz; wall = t1 - t0;
  printf "idle %.0f s: cpu %.3f s = %.3f%% of a core (target < 0.5%%); RSS %.1f MiB, peak %.1f MiB (target < 30 MiB)\n",
    wall, cpu, 100 * cpu / wall, rss / 1024, hwm / 1024 }'
