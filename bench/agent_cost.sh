#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What efawatchd costs a GPU node, in one run (2 noisy cores here: read the figures as +-0.2%):
#   idle    one agent, no mesh, scraped every 15 s: CPU share of a core and RSS
#           (targets: <= 0.1 % of a core, RSS < 25 MiB)
#   mesh    9 agents on loopback pinging each other (static peers, tcp provider), at the shipped
#           defaults (--mesh-fanout 8, --mesh-interval-ms 15000), then at --mesh-interval-ms 2000:
#           mean CPU per agent and RSS (targets at the defaults: <= 0.5 % of a core, < 30 MiB)
#   chatty  bench/pod_logs.sh: 200 pods each writing a line per millisecond, 2 % of them NCCL
#           (target < 5 % of a core)
# Usage: bench/agent_cost.sh [SECONDS]   (each phase runs SECONDS, default 60)
#        PHASES="mesh" bench/agent_cost.sh 30   (a subset of: idle mesh mesh2000 chatty)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
phases=" ${PHASES:-idle mesh mesh2000 chatty} "
# shellcheck source=bench/agent_lib.sh
. bench/agent_lib.sh
bench_init
tmp=$bench_tmp

# CPU share of a core (percent) of PIDS between two tick readings over WALL seconds.
share() { awk -v d="$1" -v w="$2" -v hz="$bench_hz" 'BEGIN {printf "%.2f", 100 * d / hz / w}'; }

# --- idle, no mesh ---
idle() {
bench_start_agent "$tmp/idle" --pod-log-root="$tmp/idle/pods"
# Start-up is not idle cost, and neither is the first scrape's (the collectors' worker thread
# starts, the scrape's code is first paged in): Prometheus scrapes an agent from its start on.
sleep 3
curl -s "http://127.0.0.1:$agent_port/metrics" >/dev/null
sleep 1
c0=$(bench_cpu_ticks "$agent_pid")
t0=$(date +%s.%N)
end=$(($(date +%s) + secs))
while [ "$(date +%s)" -lt "$end" ]; do
  curl -s "http://127.0.0.1:$agent_port/metrics" >/dev/null
  sleep 15 &
  wait $! || true
done
c1=$(bench_cpu_ticks "$agent_pid")
t1=$(date +%s.%N)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
printf 'idle   %3.0f s, no mesh:      cpu %s%% of a core (target <= 0.1%%), RSS %.1f MiB (target < 25 MiB)\n' \
  "$wall" "$(share $((c1 - c0)) "$wall")" "$(awk -v k="$(bench_status_kib "$agent_pid" VmRSS)" 'BEGIN {print k / 1024}')"
bench_stop_agent
}

# --- mesh: 9 agents, static peers on loopback ---
mesh() {
  local interval=$1 n=9 base i peers="" pids=()
  base=$((20000 + RANDOM % 20000))
  for i in $(seq 0 $((n - 1))); do
    peers+="${peers:+,}agent-$i=127.0.0.1:$((base + i))"
  done
  for i in $(seq 0 $((n - 1))); do
    "$bench_bin" --metrics-listen=127.0.0.1:0 --grpc-listen="127.0.0.1:$((base + i))" \
      --port-file="$tmp/mesh-$interval-$i/ports.json" --state-dir="$tmp/mesh-$interval-$i" \
      --sysfs-root="$tmp/nosys" --pod-log-root="$tmp/mesh-$interval-$i/pods" --log-level=warn \
      --node-name="agent-$i" --mesh-discovery=static --mesh-peers="$peers" \
      --mesh-interval-ms="$interval" --fabric-providers=tcp &
    pids+=($!)
    bench_pids+=($!)
  done
  sleep $((interval / 1000 + 5))  # past start-up and the first round
  local before=() after=() t0 t1 total=0 rss=0 max_rss=0 k
  for p in "${pids[@]}"; do before+=("$(bench_cpu_ticks "$p")"); done
  t0=$(date +%s.%N)
  sleep "$secs"
  for p in "${pids[@]}"; do after+=("$(bench_cpu_ticks "$p")"); done
  t1=$(date +%s.%N)
  for i in "${!pids[@]}"; do
    total=$((total + after[i] - before[i]))
    k=$(bench_status_kib "${pids[$i]}" VmRSS)
    rss=$((rss + k))
    [ "$k" -gt "$max_rss" ] && max_rss=$k
  done
  local wall
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
  printf 'mesh   %3.0f s, interval %5d ms: cpu %s%% of a core per agent (mean of %d; target <= 0.5%% at 15000), RSS mean %.1f MiB, max %.1f MiB (target < 30 MiB)\n' \
    "$wall" "$interval" "$(share $((total / n)) "$wall")" "$n" \
    "$(awk -v k="$rss" -v n="$n" 'BEGIN {print k / n / 1024}')" \
    "$(awk -v k="$max_rss" 'BEGIN {print k / 1024}')"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
[[ $phases == *" idle "* ]] && idle
[[ $phases == *" mesh "* ]] && mesh 15000
[[ $phases == *" mesh2000 "* ]] && mesh 2000

# --- 200 chatty pods ---
if [[ $phases == *" chatty "* ]]; then
  printf 'chatty '
  bench/pod_logs.sh 200 "$secs" 2>&1 | tail -n 1
fi
