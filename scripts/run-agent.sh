#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Quick start (a): install, build and run efawatchd locally with its embedded defaults.
# /metrics on :9477, gRPC on 127.0.0.1:9478, EFA read from /sys, pod logs from /var/log/pods.
# Extra arguments are passed to efawatchd. Stop it with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
fi
cmake --build build --target efawatchd efawatch -j"$(nproc)" | tail -n 1
# The default pod log directory: present on a Kubernetes node, created empty elsewhere so log
# analysis has a directory to watch.
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
[ -d /var/log/pods ] || $SUDO mkdir -p /var/log/pods
[ -d /var/lib/efawatch ] || $SUDO mkdir -p /var/lib/efawatch
echo "efawatchd: metrics http://localhost:9477/metrics, gRPC 127.0.0.1:9478 (try: build/bin/efawatch status --agent 127.0.0.1:9478)"
exec $SUDO build/bin/efawatchd "$@"
