#!/usr/bin/env bash
# Captures the agent's user-visible outputs, so a refactor can be shown to change none of them:
#   bench/golden.sh BUILD_DIR OUT_DIR        then   diff -r OUT_BEFORE OUT_AFTER
# What it writes under OUT_DIR:
#   analyze/<fixture>.json   `efawatch analyze --format json` of every committed NCCL fixture (and
#                            of ../shared/nccl-logs where present)
#   metrics/<tree>.prom      one /metrics scrape of the real efawatchd over each sysfs fixture tree
#                            with a pod log tree of the NCCL fixtures, values that change from run
#                            to run (time, CPU, memory, fds, durations) replaced by "X"
#   status/<tree>.json       `efawatch status --format json` against that agent, times masked
# Everything runs on loopback with ports chosen by the kernel.
set -euo pipefail
build=$(cd "${1:?usage: golden.sh BUILD_DIR OUT_DIR}" && pwd)
out=${2:?usage: golden.sh BUILD_DIR OUT_DIR}
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/analyze" "$out/metrics" "$out/status"
out=$(cd "$out" && pwd)

for f in "$repo"/tests/fixtures/nccl/*.log "$repo"/../shared/nccl-logs/*.log; do
  [ -f "$f" ] || continue
  name=$(basename "$(dirname "$f")")_$(basename "$f" .log)
  "$build/bin/efawatch" analyze --format json "$f" >"$out/analyze/$name.json" 2>&1 || true
done

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# A pod log tree in kubelet's layout: one container per NCCL fixture.
for f in "$repo"/tests/fixtures/nccl/*.log; do
  pod=$(basename "$f" .log | tr '.' '-')
  d="$work/pods/default_${pod}_0000-uid/main"
  mkdir -p "$d"
  cp "$f" "$d/0.log"
done

mask() {
  sed -E \
    -e 's/^(efawatch_(start_time_seconds|process_[a-z_]+|collector_duration_seconds|logs_checkpoint[a-z_]*|fabric_responder[a-z_]*|rdma_device_reads_total)(\{[^}]*\})?) .*/\1 X/' \
    -e 's/^(efawatch_build_info\{).*/\1X/' \
    -e 's/"(start_time|first_seen|last_seen|startTime|firstSeen|lastSeen)": *"[^"]*"/"\1": "X"/g' \
    -e 's/"(agent_revision|agentRevision|agent_version|agentVersion)": *"[^"]*"/"\1": "X"/g' \
    -e 's/"(durationSeconds|duration_seconds|last_duration_seconds)": *[0-9.e+-]+/"\1": X/g' \
    -e 's/"(last_run|start_time|first_seen|last_seen)": *"[^"]*"/"\1": "X"/g'
}

for tree in "$repo"/tests/fixtures/sysfs/*/; do
  tname=$(basename "$tree")
  state="$work/state-$tname"
  mkdir -p "$state"
  "$build/bin/efawatchd" --metrics-listen=127.0.0.1:0 --grpc-listen=127.0.0.1:0 \
    --port-file="$state/ports.json" --sysfs-root="$tree/sys" --procfs-root="$tree/proc" \
    --pod-log-root="$work/pods" --state-dir="$state" --node-name=golden --log-level=error \
    --fabric-providers=tcp --mesh-discovery=off &
  pid=$!
  for _ in $(seq 100); do [ -s "$state/ports.json" ] && break; sleep 0.1; done
  mport=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metrics"])' "$state/ports.json")
  gport=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["grpc"])' "$state/ports.json")
  # The tailer reads the pod logs within a second or two; wait until every container shows up.
  for _ in $(seq 100); do
    n=$(curl -s "127.0.0.1:$mport/metrics" | grep -c '^efawatch_nccl_info' || true)
    [ "$n" -ge "$(ls "$work/pods" | wc -l)" ] && break
    sleep 0.2
  done
  sleep 1
  curl -s "127.0.0.1:$mport/metrics" | grep '^efawatch_' | grep -v '^efawatch_fabric_' | mask | sort \
    >"$out/metrics/$tname.prom"
  "$build/bin/efawatch" status --agent "127.0.0.1:$gport" --format json | mask \
    >"$out/status/$tname.json" || true
  kill "$pid"
  wait "$pid" 2>/dev/null || true
done
echo "golden: $(find "$out" -type f | wc -l) files under $out"
