#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Probe targets other than agents are refused before any connection (docs/security.md).
# Everything runs in one network namespace that has only a loopback interface: the
# "non-local" addresses (169.254.169.254, 198.51.100.7) are put on that loopback, with a listener
# counting accepts on each, so a check that failed would connect to the listener, never off the
# machine. A control run with the block allowed shows the listener does see a dial.
# Usage: probe_targets_netns_test.sh path/to/efawatchd path/to/efawatch
set -euo pipefail

AGENT=$(realpath "${1:?usage: $0 efawatchd efawatch}")
CLI=$(realpath "${2:?usage: $0 efawatchd efawatch}")
# shellcheck source=tests/netns/lib.sh
source "$(dirname "$0")/../lib.sh"
require_netns "python3:runs the counting listener"

NS=efw-sec-$$
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

ip netns add "$NS" || skip "cannot create network namespaces here"
ip -n "$NS" link set lo up
ip -n "$NS" addr add 169.254.169.254/32 dev lo
ip -n "$NS" addr add 198.51.100.7/32 dev lo
# No interface but lo and no route: nothing sent in here can leave the machine.
[[ -z $(ip -n "$NS" route show default) ]] || fail "the namespace has a default route"

# The listener: accepts on every target address and writes how many connections it saw.
cat >"$WORK/listen.py" <<'PY'
import os, select, socket, sys
work = sys.argv[1]
socks = []
for host, port in (("169.254.169.254", 80), ("198.51.100.7", 9478), ("127.0.0.1", 0)):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port)); s.listen(16); socks.append(s)
u = socket.socket(socket.AF_UNIX); u.bind(os.path.join(work, "agent.sock")); u.listen(16)
socks.append(u)
open(os.path.join(work, "loopback_port"), "w").write(str(socks[2].getsockname()[1]))
count = 0
open(os.path.join(work, "accepts"), "w").write("0")
while True:
    ready, _, _ = select.select(socks, [], [])
    for s in ready:
        c, _ = s.accept(); c.close(); count += 1
        open(os.path.join(work, "accepts.tmp"), "w").write(str(count))
        os.replace(os.path.join(work, "accepts.tmp"), os.path.join(work, "accepts"))
PY
ip netns exec "$NS" python3 "$WORK/listen.py" "$WORK" &
PIDS+=($!)
until_ms=$(deadline_after 10000)
until [[ -s $WORK/loopback_port ]]; do before "$until_ms" || fail "listener did not start"; sleep 0.05; done
LPORT=$(cat "$WORK/loopback_port")

# start_agent NAME ALLOWED_CIDRS: a plaintext agent on the namespace's loopback; sets PORT to its
# gRPC port. Run in this shell (not in $(...)) so cleanup knows its pid.
start_agent() {
  ip netns exec "$NS" "$AGENT" --grpc-listen=127.0.0.1:0 --metrics-listen=127.0.0.1:0 \
    --port-file="$WORK/$1.ports" --sysfs-root="$WORK" --pod-log-root="$WORK" \
    --state-dir="$WORK" --fabric-providers=tcp --fabric-interface=lo \
    --probe-allow-loopback=false --probe-allowed-cidrs="$2" >"$WORK/$1.log" 2>&1 &
  PIDS+=($!)
  local until_ms
  until_ms=$(deadline_after 20000)
  until grep -q '"grpc"' "$WORK/$1.ports" 2>/dev/null; do
    before "$until_ms" || { cat "$WORK/$1.log"; fail "agent $1 did not start"; }
    sleep 0.05
  done
  PORT=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["grpc"])' "$WORK/$1.ports")
}
ping_from() {  # ping_from GRPC_PORT TARGET: the CLI's output (rc ignored)
  ip netns exec "$NS" "$CLI" ping --agent "127.0.0.1:$1" --peer "$2" --count 1 \
    --deadline-ms 3000 --timeout-ms 5000 2>&1 || true
}

start_agent strict 203.0.113.0/24
GRPC=$PORT
for target in 169.254.169.254:80 198.51.100.7:9478 "127.0.0.1:$LPORT" "localhost:$LPORT" \
  "unix:$WORK/agent.sock" "unix://$WORK/agent.sock"; do
  out=$(ping_from "$GRPC" "$target")
  grep -q "refused" <<<"$out" || fail "$target not refused: $out"
  echo "refused: $target"
done
[[ $(cat "$WORK/accepts") == 0 ]] || fail "the agent connected to a refused target ($(cat "$WORK/accepts") accepts)"
echo "no connection attempted to any refused target"

# Control: with 198.51.100.0/24 allowed the same agent binary dials the listener (which is no
# agent, so the ping fails), so the zero above is no blind spot of the listener.
start_agent control 198.51.100.0/24
GRPC2=$PORT
out=$(ping_from "$GRPC2" 198.51.100.7:9478)
grep -q "refused" <<<"$out" && fail "control target refused: $out"
until_ms=$(deadline_after 10000)
until [[ $(cat "$WORK/accepts") -ge 1 ]]; do
  before "$until_ms" || fail "control: the listener saw no connection"
  sleep 0.05
done
echo "control: an allowed target is dialled ($(cat "$WORK/accepts") accepts)"
echo "PASS"
