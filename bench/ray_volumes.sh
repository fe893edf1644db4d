#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cost of following Ray session logs in pod volumes (issue 16, "Bounds and costs"): the real
# efawatchd on a KubeRay-shaped node, against the plain-container case measured in the same run.
#
#   ray    2 Ray worker pods, each with its container log under the pod log root and Ray's
#          /tmp/ray emptyDir under the kubelet pods directory: session_<ts>/logs/ with FILES
#          (default 200) worker files (`worker-<id>-<job>-<pid>.out|.err` of FILES/2 workers),
#          `session_latest` pointing at it, and an older session beside it. ACTIVE (default 50)
#          of each pod's .out files are written during the run, the rest hold what finished
#          workers left.
#   plain  the same written files' lines, at the same rate, into kubelet CRI container logs
#          (/var/log/pods/<ns>_<pod>_<uid>/<container>/0.log) only: one pod per training process.
#
# Each written file gets RATE (default 20) lines per second, one in NCCL_EVERY (default 5) an
# NCCL INFO record behind Ray's `(RayTrainWorker pid=…, ip=…)` prefix, the rest training output:
# a worker logging a few steps a second plus the NCCL records of FSDP's process groups. (The
# stress case, 200 containers at 1000 lines/s, is bench/pod_logs.sh.)
# For each case, over DURATION seconds (default 60) of writing and until the agent has read it
# all: the agent's mean CPU (share of one core, from /proc/PID/stat), its peak (VmHWM) and final
# (VmRSS) RSS, and the lines it read; then the ratio ray/plain. Targets: < 5 % of a core and
# < 50 MiB in both cases.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/agent_lib.sh
. bench/agent_lib.sh
duration=${DURATION:-60}
files=${FILES:-200}
active=${ACTIVE:-50}
rate=${RATE:-20}
nccl_every=${NCCL_EVERY:-5}
pods=2
workers=$((files / 2))
[ "$active" -le "$workers" ] || { echo "ACTIVE ($active) > FILES/2 ($workers)" >&2; exit 1; }
bench_init

# A Ray worker id: 28 bytes of hex, like Ray's (56 characters).
worker_id() { printf '%056x' "$1"; }

# ray DIR: the fixture kubelet tree; DIR/active lists the files written during the run and
# DIR/idle the other .out files, as write_worker_logs.py reads them. Echoes the lines it holds.
make_ray_tree() {
  local dir=$1 p w uid name vol ts logs old pid job path list lines=0
  mkdir -p "$dir/logs" "$dir/kubelet"
  : >"$dir/active"
  : >"$dir/idle"
  for p in $(seq "$pods"); do
    uid=$(printf '8d6f4c2e-%04d-4a1b-9c3d-5e7f9a1b3c5d' "$p")
    name="rc-efa-gpu-worker-$p"
    mkdir -p "$dir/logs/ray_${name}_${uid}/ray-worker"
    echo "2026-12-02T10:00:00.000000001Z stdout F Local node IP: 10.0.$p.11" \
      >"$dir/logs/ray_${name}_${uid}/ray-worker/0.log"
    lines=$((lines + 1))
    vol="$dir/kubelet/$uid/volumes/kubernetes.io~empty-dir/ray-logs"
    ts="2026-03-02_09-00-0${p}_00000${p}_7"
    logs="$vol/session_$ts/logs"
    old="$vol/session_2026-03-01_08-00-00_000000_7/logs"
    mkdir -p "$logs" "$old"
    ln -s "/tmp/ray/session_$ts" "$vol/session_latest"
    # Ray's own files beside the workers' (not NCCL output; not followed).
    echo "raylet started" >"$logs/raylet.out"
    echo "gcs started" >"$logs/gcs_server.out"
    for w in $(seq 0 9); do
      echo "old session" >"$old/worker-$(worker_id "$w")-01000000-$((2000 + w)).out"
    done
    for w in $(seq 0 $((workers - 1))); do
      pid=$((3000 + 1000 * p + w))
      job=01000000
      [ "$w" -lt "$active" ] && job=02000000
      path="$logs/worker-$(worker_id $((p * 100000 + w)))-$job-$pid"
      echo "[W socket.cpp:464] [c10d] The server socket has failed to listen on [::]:29500" \
        >"$path.err"
      lines=$((lines + 1))
      list="$dir/idle"
      [ "$w" -lt "$active" ] && list="$dir/active"
      printf '%s\t%s\t10.0.%s.11\t%s\n' "$path.out" "$name" "$p" "$pid" >>"$list"
    done
  done
  lines=$((lines + $(python3 bench/write_worker_logs.py init "$dir/active")))
  lines=$((lines + $(python3 bench/write_worker_logs.py init "$dir/idle")))
  echo "$lines"
}

# plain DIR RAYDIR: one CRI container log per written file of the ray tree, the same workers.
# Echoes the lines it holds.
make_plain_tree() {
  local dir=$1 path host ip pid k=0 d
  mkdir -p "$dir/logs" "$dir/kubelet"
  : >"$dir/active"
  while IFS=$'\t' read -r path host ip pid; do
    k=$((k + 1))
    d="$dir/logs/train_worker-${k}_0c1e7a52-$(printf '%04d' "$k")-4f3e-8a2b-6d9c1e3f5a7b/main"
    mkdir -p "$d"
    printf '%s\t%s\t%s\t%s\n' "$d/0.log" "$host" "$ip" "$pid" >>"$dir/active"
  done <"$2/active"
  python3 bench/write_worker_logs.py init --cri "$dir/active"
}

# measure CASE DIR INITIAL_LINES [WRITER FLAG...]: prints one result row and sets cpu_pct, hwm_mib.
measure() {
  local name=$1 dir=$2 initial=$3 c0 c1 t0 t1 written read watched volume hwm rss
  shift 3
  bench_start_agent "$dir/agent" --pod-log-root="$dir/logs" --pod-volume-root="$dir/kubelet"
  read=$(bench_wait_metric efawatch_logs_read_lines_total "$initial" 30)
  [ "$read" -ge "$initial" ] || echo "$name: the agent read $read of $initial lines at start" >&2
  sleep 2  # start-up is not the steady cost
  watched=$(bench_metric efawatch_logs_files_watched)
  c0=$(bench_cpu_ticks "$agent_pid")
  t0=$(date +%s.%N)
  written=$(python3 bench/write_worker_logs.py run "$dir/active" --seconds "$duration" \
    --rate "$rate" --nccl-every "$nccl_every" "$@")
  # The window ends when the agent has read every line written in it, so its lag is counted.
  read=$(bench_wait_metric efawatch_logs_read_lines_total $((initial + written)) 15)
  c1=$(bench_cpu_ticks "$agent_pid")
  t1=$(date +%s.%N)
  # Lines the agent attributed to a pod's volume (0 in the plain case), and to how many pods.
  volume=$(curl -s "http://127.0.0.1:$agent_port/metrics" | awk '
    /^efawatch_logs_lines_total\{.*container="\(volume:/ {
      s += $2; match($0, /pod="[^"]*"/); pods[substr($0, RSTART, RLENGTH)] = 1 }
    END {printf "%d lines in %d pods", s, length(pods)}')
  hwm=$(bench_status_kib "$agent_pid" VmHWM)
  rss=$(bench_status_kib "$agent_pid" VmRSS)
  bench_stop_agent
  cpu_pct=$(awk -v a="$c0" -v b="$c1" -v t0="$t0" -v t1="$t1" -v hz="$bench_hz" \
    'BEGIN {printf "%.3f", (b - a) / hz / (t1 - t0) * 100}')
  hwm_mib=$(awk -v k="$hwm" 'BEGIN {printf "%.1f", k / 1024}')
  printf '%-6s %8s %10s %13s %15s %12s %13.1f\n' "$name" "$watched" "$written" \
    "$((read - initial))" "$cpu_pct" "$hwm_mib" "$(awk -v k="$rss" 'BEGIN {print k / 1024}')"
  volume_note="$name: read from pod volumes: $volume (expected $((initial + written - pods)))"
}

ray_lines=$(make_ray_tree "$bench_tmp/ray")
plain_lines=$(make_plain_tree "$bench_tmp/plain" "$bench_tmp/ray")
n_active=$(wc -l <"$bench_tmp/ray/active")
echo "ray_volumes: $pods Ray pods x $files worker files ($active written each), $n_active files" \
  "written at $rate lines/s each (1 in $nccl_every NCCL INFO), ${duration} s per case"
printf '%-6s %8s %10s %13s %15s %12s %13s\n' case watched written "read (window)" \
  "CPU % of core" "peak RSS MiB" "final RSS MiB"
measure plain "$bench_tmp/plain" "$plain_lines" --cri
plain_cpu=$cpu_pct
plain_hwm=$hwm_mib
measure ray "$bench_tmp/ray" "$ray_lines"
echo "$volume_note"
awk -v pc="$plain_cpu" -v ph="$plain_hwm" -v rc="$cpu_pct" -v rh="$hwm_mib" 'BEGIN {
  printf "ratio ray/plain: CPU %.2fx, peak RSS %.2fx; targets < 5%% of a core and < 50 MiB: %s\n",
    (pc > 0 ? rc / pc : 0), rh / ph,
    (rc < 5 && pc < 5 && rh < 50 && ph < 50) ? "met" : "MISSED" }'
