#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What hostile tenants cost the agent, in one run against a run without them. Both runs have
# QUIET pods (default 200) that each wrote a few lines, and a victim pod that starts to print a
# TCP fallback (NCCL over the Socket transport) 5 s into the run. The hostile run adds, in pods'
# volumes and logs:
#   - a sparse file of 50 GiB of NUL bytes named like a Ray worker log (`truncate -s`, free)
#   - a writer appending plain text to its container log as fast as it can
#   - a writer appending NCCL INFO lines to its container log as fast as it can
# Reported per run: the agent's CPU over SECONDS (default 20) as a share of one core, its peak
# RSS, the time from the victim's first line to efawatch_nccl_tcp_fallback, and the bytes read
# and skipped. Targets (issue #33): hostile CPU <= 25 % of a core, victim <= 3 s, RSS within
# --memory-budget (96 MiB).
#   bench/tenant_cost.sh [QUIET] [SECONDS]   (EFAWATCH_BIN=path/to/efawatchd)
set -euo pipefail
cd "$(dirname "$0")/.."
quiet=${1:-200}
secs=${2:-20}
# shellcheck source=bench/agent_lib.sh
. bench/agent_lib.sh
bench_init

cri() { printf '2026-12-04T10:00:00.000000001Z stdout F %s\n' "$1"; }

# setup DIR HOSTILE: the pod log tree and kubelet volume tree of one run.
setup() {
  local dir=$1 hostile=$2 i
  for i in $(seq "$quiet"); do
    mkdir -p "$dir/pods/train_quiet-${i}_uidq${i}/main"
    cri "step 1 loss 0.25" >"$dir/pods/train_quiet-${i}_uidq${i}/main/0.log"
  done
  mkdir -p "$dir/pods/train_victim-0_uidv/main"
  : >"$dir/pods/train_victim-0_uidv/main/0.log"
  [ "$hostile" = 1 ] || return 0
  local vol="$dir/kubelet/uids/volumes/kubernetes.io~empty-dir/ray-logs"
  local session=session_2026-12-04_10-00-00_000000_1
  mkdir -p "$dir/pods/train_sparse-0_uids/main" "$vol/$session/logs"
  cri "start" >"$dir/pods/train_sparse-0_uids/main/0.log"
  ln -s "/tmp/ray/$session" "$vol/session_latest"
  truncate -s 50G "$vol/$session/logs/worker-0123456789abcdef-01000000-4242.out"
  mkdir -p "$dir/pods/train_flood-0_uidf/main" "$dir/pods/train_ncclflood-0_uidn/main"
}

# The victim's log, 5 s in: NCCL choosing its Socket transport between two nodes.
victim() {
  local log=$1
  sleep 5
  {
    cri "node-a:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>"
    cri "node-a:4242:4242 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so."
    cri "node-a:4242:4242 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>"
    cri "node-a:4242:4242 [0] NCCL INFO Using network Socket"
    cri "node-a:4242:4242 [0] NCCL INFO comm 0x55d0 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1f2e3d4c5b6a7988 - Init START"
    cri "node-a:4242:4242 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0"
    cri "node-a:4242:4242 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/Socket/0"
  } >>"$log"
  date +%s.%N
}

# flood FILE KIND: appends lines as fast as one process can for SECONDS.
flood() {
  python3 - "$1" "$2" "$secs" <<'PY'
import sys, time
path, kind, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
if kind == "nccl":
    line = ("2026-12-04T10:00:00.000000001Z stdout F node-b:77:77 [3] NCCL INFO Channel 05/0 : "
            "3[3] -> 11[3] [send] via NET/Libfabric/3/GDRDMA/Shared\n")
else:
    line = "2026-12-04T10:00:00.000000001Z stdout F {'loss': 1.2345, 'grad_norm': 0.51, 'epoch': 0.1}\n"
block = line * 2000
end = time.time() + secs
with open(path, "a") as f:
    while time.time() < end:
        f.write(block)
        f.flush()
PY
}

# MiB of efawatch_logs_skipped_bytes_total{reason=REASON}.
skipped() {
  curl -s "http://127.0.0.1:$agent_port/metrics" |
    awk -v r="$1" 'index($1, "efawatch_logs_skipped_bytes_total{reason=\"" r "\"}") == 1 {
      printf "%d", $2 / 1048576 }'
}

run() {
  local name=$1 hostile=$2 dir="$bench_tmp/$1"
  setup "$dir" "$hostile"
  bench_start_agent "$dir/agent" --pod-log-root="$dir/pods" --pod-volume-root="$dir/kubelet" \
    --fabric-responder=false
  local pid=$agent_pid writers=()
  sleep 2  # the agent's first pass over the quiet pods
  if [ "$hostile" = 1 ]; then
    flood "$dir/pods/train_flood-0_uidf/main/0.log" text &
    writers+=($!)
    flood "$dir/pods/train_ncclflood-0_uidn/main/0.log" nccl &
    writers+=($!)
  fi
  local t0 ticks0 wrote flagged=""
  t0=$(date +%s.%N)
  ticks0=$(bench_cpu_ticks "$pid")
  victim "$dir/pods/train_victim-0_uidv/main/0.log" >"$dir/victim-at" &
  local victim_pid=$!
  while awk -v a="$(date +%s.%N)" -v b="$t0" -v s="$secs" 'BEGIN {exit !(a - b < s)}'; do
    if [ -z "$flagged" ] && [ -s "$dir/victim-at" ] &&
      [ "$(bench_metric efawatch_nccl_tcp_fallback)" -ge 1 ]; then
      flagged=$(date +%s.%N)
    fi
    sleep 0.1
  done
  local ticks1 hwm
  ticks1=$(bench_cpu_ticks "$pid")
  hwm=$(bench_status_kib "$pid" VmHWM)
  wait "$victim_pid"
  wrote=$(cat "$dir/victim-at")
  for w in "${writers[@]}"; do wait "$w" || true; done
  local flag_s="not flagged"
  [ -n "$flagged" ] && flag_s=$(awk -v a="$flagged" -v b="$wrote" 'BEGIN {printf "%.2f s", a - b}')
  printf '%-8s agent CPU %5.1f %% of a core over %s s, peak RSS %d MiB, victim flagged after %s\n' \
    "$name" "$(awk -v t=$((ticks1 - ticks0)) -v hz="$bench_hz" -v s="$secs" \
      'BEGIN {print 100 * t / hz / s}')" "$secs" $((hwm / 1024)) "$flag_s"
  printf '         read %d MiB; skipped: hole %d MiB, budget %d MiB, oversized %d MiB, binary %d MiB\n' \
    $(($(bench_metric efawatch_logs_read_bytes_total) >> 20)) "$(skipped hole)" \
    "$(skipped budget)" "$(skipped oversized)" "$(skipped binary)"
  bench_stop_agent
  rm -rf "$dir"
}

echo "tenant_cost: $quiet quiet pods, $secs s per run, $(nproc) CPUs"
run quiet 0
run hostile 1
