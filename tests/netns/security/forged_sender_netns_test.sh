#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A fabric message that claims another sender gets no answer at that sender (docs/security.md,
# "Probe targets only toward agents"). Three network namespaces, all made here: R (the
# responder under test) joined by one veth pair to V (the victim, whose address is claimed) and
# by another to Z (the forger). V and Z reach only R, so nothing leaves the machine.
#   1. Z pings R for real: answered (the path and the hello handshake work).
#   2. Z sends pings claiming V's address from an endpoint R has never heard of: no connection
#      ever reaches V (TCP PassiveOpens in V stays 0), R counts them `unverified`.
#   3. Z introduces its own address first, then claims V's: R counts them `spoofed`, V still
#      sees nothing, and nothing comes back to Z.
#   4. Control: a second responder in R that answers claims unchecked (--no-verify-source)
#      does connect to V and deliver the forged pongs there, so steps 2 and 3 could have failed.
# Usage: forged_sender_netns_test.sh path/to/efawatch-fabric-probe
set -euo pipefail

TOOL=$(realpath "${1:?usage: $0 path/to/efawatch-fabric-probe}")
# shellcheck source=tests/netns/lib.sh
source "$(dirname "$0")/../lib.sh"
require_netns "python3:reads the tool's JSON"

R=efw-fr-$$ V=efw-fv-$$ Z=efw-fz-$$
N=$(($$ % 200))
IP_RV=10.202.$N.1 IP_V=10.202.$N.2 IP_RZ=10.203.$N.1 IP_Z=10.203.$N.2
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  for ns in "$R" "$V" "$Z"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
json() { python3 -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print($1)"; }

ip netns add "$R" || skip "cannot create network namespaces here"
ip netns add "$V"
ip netns add "$Z"
ip link add rv$$ netns "$R" type veth peer name vr$$ netns "$V"
ip link add rz$$ netns "$R" type veth peer name zr$$ netns "$Z"
ip -n "$R" addr add "$IP_RV/24" dev rv$$
ip -n "$R" addr add "$IP_RZ/24" dev rz$$
ip -n "$V" addr add "$IP_V/24" dev vr$$
ip -n "$Z" addr add "$IP_Z/24" dev zr$$
for ns in "$R" "$V" "$Z"; do ip -n "$ns" link set lo up; done
ip -n "$R" link set rv$$ up
ip -n "$R" link set rz$$ up
ip -n "$V" link set vr$$ up
ip -n "$Z" link set zr$$ up
# V and Z route only to R; R has no default route and does not forward.
ip -n "$V" route add default via "$IP_RV"
ip -n "$Z" route add default via "$IP_RZ"

until_ms=$(deadline_after 10000)
until ip -n "$R" link show rv$$ | grep -q LOWER_UP && ip -n "$R" link show rz$$ | grep -q LOWER_UP; do
  before "$until_ms" || fail "veth pairs not up within 10 s"
  sleep 0.05
done

# Starts a responder in namespace $1 on interface $2, writing its address to $WORK/$3.addr; the
# provider lists a fresh interface only once it is running, so it is started again until it
# serves (or 30 s pass). Extra arguments go to the responder.
start_responder() {
  local ns=$1 dev=$2 name=$3
  shift 3
  local until_ms
  until_ms=$(deadline_after 30000)
  while true; do
    ip netns exec "$ns" "$TOOL" --provider tcp --interface "$dev" responder \
      --address-file "$WORK/$name.addr" "$@" >"$WORK/$name.json" 2>&1 &
    local pid=$!
    while [[ ! -s $WORK/$name.addr ]] && kill -0 "$pid" 2>/dev/null && before "$until_ms"; do
      sleep 0.05
    done
    if [[ -s $WORK/$name.addr ]]; then
      PIDS+=("$pid")
      eval "${name}_PID=$pid"
      return
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    before "$until_ms" || { cat "$WORK/$name.json"; fail "responder $name did not start"; }
    sleep 0.1
  done
}
# Stops responder $1 and waits until it has written its counters (its last JSON line, read with
# `counters NAME`). Not in a command substitution: `wait` works only in the shell that started it.
stop_responder() {
  local pid_var="${1}_PID"
  kill -TERM "${!pid_var}"
  wait "${!pid_var}" || true
}
counters() { tail -1 "$WORK/$1.json"; }
passive_opens() {  # TCP connections accepted in namespace $1 since it was made
  ip netns exec "$1" python3 -c '
lines = [l.split() for l in open("/proc/net/snmp") if l.startswith("Tcp:")]
print(lines[1][lines[0].index("PassiveOpens")])'
}
from_z() { ip netns exec "$Z" "$TOOL" --provider tcp --interface zr$$ "$@"; }

start_responder "$V" vr$$ victim
start_responder "$R" rv$$ checked
VICTIM=$(cat "$WORK/victim.addr")
CHECKED=$(cat "$WORK/checked.addr")
head -1 "$WORK/checked.json" | json 'd["fabric"]["provider"], "source:", d["fabric"]["source"]'
[[ $(head -1 "$WORK/checked.json" | json 'd["fabric"]["source"]') == True ]] ||
  fail "the responder did not get FI_SOURCE from the tcp provider"

echo "== 1. a real ping from Z is answered"
out=$(from_z ping --peer "$CHECKED" --count 5 --warmup 0 --timeout-ms 2000)
[[ $(echo "$out" | json 'd["received"]') == 5 ]] || fail "real ping not answered: $out"
echo "PASS"

echo "== 2. pings from an unknown endpoint claiming V's address"
out=$(from_z forge --peer "$CHECKED" --claim "$VICTIM" --count 10)
echo "$out"
[[ $(echo "$out" | json 'd["received_back"]') == 0 ]] || fail "the forger got answers"
echo "== 3. the forger introduces itself, then claims V's address"
out=$(from_z forge --peer "$CHECKED" --claim "$VICTIM" --count 10 --introduce)
echo "$out"
[[ $(echo "$out" | json 'd["introduced"]') == True ]] || fail "the forger's real hello was not answered"
[[ $(echo "$out" | json 'd["received_back"]') == 0 ]] || fail "the forger got answers"
# R has handled the forged pings once it answers a later real ping (one thread, in order).
out=$(from_z ping --peer "$CHECKED" --count 1 --warmup 0 --timeout-ms 2000)
[[ $(echo "$out" | json 'd["received"]') == 1 ]] || fail "later real ping not answered: $out"
opens=$(passive_opens "$V")
[[ $opens == 0 ]] || fail "$opens TCP connection(s) reached the victim"
echo "PASS: no connection reached V"
stop_responder checked
counters=$(counters checked)
echo "checked responder: $counters"
[[ $(echo "$counters" | json 'd["spoofed"]') == 10 ]] || fail "spoofed count is not 10"
[[ $(echo "$counters" | json 'd["unverified"] >= 10') == True ]] || fail "unverified count < 10"
[[ $(echo "$counters" | json 'd["pings"]') == 6 ]] || fail "answered pings are not the 6 real ones"
echo "PASS: counted 10 spoofed, the unverified ones, and answered only the 6 real pings"

echo "== 4. control: a responder that answers claims unchecked reflects to V"
start_responder "$R" rv$$ unchecked --no-verify-source
out=$(from_z forge --peer "$(cat "$WORK/unchecked.addr")" --claim "$VICTIM" --count 10)
until_ms=$(deadline_after 10000)
while [[ $(passive_opens "$V") == 0 ]]; do
  before "$until_ms" || fail "control: the unchecked responder never reached V (test blind)"
  sleep 0.05
done
stop_responder unchecked
stop_responder victim
counters=$(counters victim)
echo "victim: $counters"
[[ $(echo "$counters" | json 'd["received"]') -ge 1 ]] || fail "control: V received no reflected pong"
echo "PASS: the control reflection reached V, so the checks above can see one"
