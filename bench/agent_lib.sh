# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Helpers for the benchmarks that measure efawatchd's own cost (pod_logs.sh, ray_volumes.sh).
# Sourced, not run. Everything stays on loopback and in one temporary directory, removed on exit.
#
#   bench_init                      make $bench_tmp, remove it (and stop what was started) on exit
#   bench_start_agent DIR FLAG...   start efawatchd on 127.0.0.1 port 0 with its files in DIR;
#                                   sets agent_pid and agent_port (the metrics port)
#   bench_stop_agent                SIGTERM the agent started last and wait for it
#   bench_cpu_ticks PID             user + system CPU of PID so far, in clock ticks
#   bench_status_kib PID FIELD      a /proc/PID/status field in KiB (VmRSS, VmHWM)
#   bench_metric NAME               the sum of every series of NAME on the agent's /metrics
#   bench_wait_metric NAME MIN SECS wait up to SECS for NAME >= MIN; prints its last value
bench_bin=${EFAWATCH_BIN:-build/bin/efawatchd}
# shellcheck disable=SC2034  # used by the scripts that source this
bench_hz=$(getconf CLK_TCK)
bench_pids=()

bench_cleanup() {
  local p
  for p in "${bench_pids[@]}"; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$bench_tmp"
}

bench_init() {
  [ -x "$bench_bin" ] || { echo "$bench_bin not built (or set EFAWATCH_BIN)" >&2; exit 1; }
  bench_tmp=$(mktemp -d)
  trap bench_cleanup EXIT
}

bench_start_agent() {
  local dir=$1
  shift
  mkdir -p "$dir"
  "$bench_bin" --metrics-listen=127.0.0.1:0 --grpc-listen=127.0.0.1:0 \
    --port-file="$dir/ports.json" --state-dir="$dir/state" --sysfs-root="$dir/nosys" \
    --log-level=warn "$@" &
  agent_pid=$!
  bench_pids+=("$agent_pid")
  for _ in $(seq 150); do
    [ -s "$dir/ports.json" ] && break
    sleep 0.1
  done
  [ -s "$dir/ports.json" ] || { echo "efawatchd did not write its ports" >&2; exit 1; }
  agent_port=$(sed -E 's/.*"metrics": ([0-9]+).*/\1/' "$dir/ports.json")
}

bench_stop_agent() {
  kill "$agent_pid" 2>/dev/null || true
  wait "$agent_pid" 2>/dev/null || true
}

# Fields 14 and 15 of /proc/PID/stat (utime, stime); the command name has no spaces here.
bench_cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

bench_status_kib() { awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"; }

bench_metric() {
  curl -s "http://127.0.0.1:$agent_port/metrics" |
    awk -v m="$1" '$1 == m || index($1, m "{") == 1 {s += $2} END {printf "%.0f\n", s}'
}

bench_wait_metric() {
  local v end=$(($(date +%s) + $3))
  while :; do
    v=$(bench_metric "$1")
    if awk -v v="$v" -v min="$2" 'BEGIN {exit !(v >= min)}' || [ "$(date +%s)" -ge "$end" ]; then
      echo "$v"
      return
    fi
    sleep 0.2
  done
}
