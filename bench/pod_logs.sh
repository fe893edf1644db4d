#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Log ingestion cost: PODS containers (default 200) each write a line per millisecond for SECONDS
# (default 60): mostly training chatter, one line in 50 an NCCL INFO record. efawatchd follows
# them all; we report its CPU (share of one core) and peak RSS, and, measured in the same run,
# the CPU time `cat` takes to read the same bytes once (reference: reading, no parsing).
# Targets: agent < 5% of one core and < 50 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
pods=${1:-200}
secs=${2:-60}
# shellcheck source=bench/agent_lib.sh
. bench/agent_lib.sh
bench_init
tmp=$bench_tmp
for i in $(seq "$pods"); do mkdir -p "$tmp/pods/train_worker-${i}_uid${i}/main"; done
bench_start_agent "$tmp/agent" --pod-log-root="$tmp/pods" --pod-volume-root="$tmp/kubelet"
pid=$agent_pid
python3 - "$tmp/pods" "$secs" <<'PY' &
import os, sys, time
root, secs = sys.argv[1], float(sys.argv[2])
files = [open(os.path.join(root, d, "main", "0.log"), "a", buffering=1 << 16)
         for d in sorted(os.listdir(root))]
nccl = ("2026-12-02T10:00:00.000000001Z stdout F node-a:4242:4242 [0] NCCL INFO Channel 00/0 : "
        "0[0] -> 8[0] [send] via NET/AWS Libfabric/0/GDRDMA\n")
start = time.time(); n = 0
# One line per container per millisecond, written in 20 ms batches.
while time.time() - start < secs:
    tick = time.time()
    for k in range(20):
        for i, f in enumerate(files):
            n += 1
            f.write(nccl if n % 50 == 0 else
                    "2026-12-02T10:00:00.000000001Z stdout F step %d loss 0.1234 lr 3e-4\n" % n)
    for f in files:
        f.flush()
    delay = 0.020 - (time.time() - tick)
    if delay > 0:
        time.sleep(delay)
print("writer: %d lines in %.0f s (%.0f lines/s)" % (n, time.time() - start,
                                                     n / (time.time() - start)), file=sys.stderr)
PY
writer=$!
bench_pids+=("$writer")
a0=$(bench_cpu_ticks "$pid"); t0=$(date +%s.%N)
wait "$writer"
a1=$(bench_cpu_ticks "$pid"); t1=$(date +%s.%N)
sleep 2
# Reference: CPU seconds (user+sys) of one `cat` over the same files, page cache warm.
ref=$( { /usr/bin/env time -f '%U %S' cat "$tmp"/pods/*/main/0.log > /dev/null; } 2>&1 | awk '{print $1 + $2}')
hwm=$(bench_status_kib "$pid" VmHWM)
lines=$(bench_metric efawatch_logs_read_lines_total)
awk -v a0="$a0" -v a1="$a1" -v ref="$ref" -v t0="$t0" -v t1="$t1" -v hz="$bench_hz" \
    -v hwm="$hwm" -v lines="$lines" -v pods="$pods" 'BEGIN {
  wall = t1 - t0; cpu_s = (a1 - a0) / hz; agent = cpu_s / wall * 100;
  printf "%d pods, %.0f s: agent read %s lines; agent CPU %.2f%% of a core (target < 5%%), "\
         "peak RSS %.1f MiB (target < 50 MiB); agent CPU %.2f s vs reference cat %.2f s "\
         "(ratio %.1fx)\n", pods, wall, lines, agent, hwm / 1024, cpu_s, ref,
         (ref > 0 ? cpu_s / ref : 0) }'
