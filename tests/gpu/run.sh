#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds efawatch with CUDA and NCCL and runs the GPU checks on this machine:
#   1. nccl_backend_test: every collective on the local GPUs, data checked, NCCL's log analyzed
#   2. a real efawatchd coordinating `efawatch collective --backend nccl` over its own GPUs,
#      printing nccl-tests-like tables for each collective
# Usage: tests/gpu/run.sh [build-dir]   (default build-gpu)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-gpu}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total \
  --format=csv || echo "nvidia-smi not found"
scripts/setup.sh
cmake -S . -B "$BUILD" -G Ninja -DEFAWATCH_CUDA=ON -DEFAWATCH_TESTS=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" --target efawatchd efawatch nccl_backend_test -j"$(nproc)" | tail -n 1
"$BUILD/bin/efawatch" version

echo "== nccl_backend_test"
ctest --test-dir "$BUILD" -R nccl_backend_test --output-on-failure -V | grep -E \
  'OK|FAILED|SKIPPED|GPU\(s\)|NCCL .* network|Failure|Expected|Which' || true

echo "== efawatch collective --backend nccl against a real agent"
WORK=$(mktemp -d)
trap 'kill "$AGENT_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/pods" "$WORK/state"
"$BUILD/bin/efawatchd" --metrics-listen=127.0.0.1:0 --grpc-listen=127.0.0.1:0 \
  --port-file="$WORK/ports.json" --pod-log-root="$WORK/pods" --state-dir="$WORK/state" \
  --sysfs-root=/sys >"$WORK/agent.log" 2>&1 &
AGENT_PID=$!
for _ in $(seq 100); do [[ -s $WORK/ports.json ]] && break; sleep 0.1; done
GRPC=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["grpc"])' "$WORK/ports.json")
rc=0
for op in all_reduce all_gather reduce_scatter broadcast; do
  "$BUILD/bin/efawatch" collective --agents "127.0.0.1:$GRPC" --backend nccl --op "$op" \
    --sizes 1M:1G:4 --iters 20 --deadline-ms 300000 || rc=$?
done
echo "== NCCL's own log (first lines)"
head -n 20 "$WORK"/state/nccl-probe-*.log 2>/dev/null || true
exit $rc
