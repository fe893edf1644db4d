#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Scrape cost with 32 EFA devices: efawatchd serves the p5.48xlarge fixture, and we take the
# median of N scrapes (default 100), twice: with the read cache off (every scrape reads all
# ~1,300 counter files: the worst case) and with the default cache (a device is read at most
# once a second, so back-to-back scrapes mostly reuse it). Reference, measured in the same run: `cat` of the same counter files by one process,
# which is the floor for reading them at all. Target: median scrape < 20 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100}
interval=${2:-0}
bin=${EFAWATCH_BIN:-build/bin/efawatchd}
fixture=tests/fixtures/sysfs/p5.48xlarge
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
"$bin" --metrics-listen=127.0.0.1:0 --grpc-listen=127.0.0.1:0 --port-file="$tmp/ports.json" \
  --sysfs-root="$fixture/sys" --procfs-root="$fixture/proc" --pod-log-root="$tmp" \
  --state-dir="$tmp" --efa-min-read-interval-ms="$interval" --log-level=warn &
pid=$!
for _ in $(seq 100); do [ -s "$tmp/ports.json" ] && break; sleep 0.1; done
port=$(sed -E 's/.*"metrics": ([0-9]+).*/\1/' "$tmp/ports.json")
find "$fixture/sys" -path '*hw_counters*' -type f > "$tmp/files"
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
c0=$(cpu)
for _ in $(seq "$n"); do
  curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port/metrics"
done | sort -n > "$tmp/scrape"
c1=$(cpu)
for _ in $(seq "$n"); do
  s=$(date +%s%N); xargs cat < "$tmp/files" > /dev/null; e=$(date +%s%N)
  echo "$(( (e - s) / 1000 ))e-6"
done | awk '{ printf "%.6f\n", $1 }' | sort -n > "$tmp/cat"
median() { awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }' "$1"; }
ms=$(median "$tmp/scrape"); mc=$(median "$tmp/cat")
samples=$(curl -s "http://127.0.0.1:$port/metrics" | grep -c '^efawatch_efa_')
# CPU per scrape (user+sys of the agent) is the load-independent figure on a noisy machine.
awk -v c0="$c0" -v c1="$c1" -v hz="$(getconf CLK_TCK)" -v n="$n" 'BEGIN {
  printf "agent CPU per scrape: %.2f ms\n", 1000 * (c1 - c0) / hz / n }'
export interval; awk -v s="$ms" -v c="$mc" -v n="$n" -v k="$samples" 'BEGIN {
  printf "read cache %s: 32 devices, %d efawatch_efa_* samples: median scrape %.2f ms over %d scrapes (target < 20 ms); "\
         "reference: cat of the same %s files %.2f ms; ratio %.2fx\n", (ENVIRON["interval"] == "0" ? "off" : "1 s"), k, s * 1000, n, "counter", c * 1000, s / c }'
