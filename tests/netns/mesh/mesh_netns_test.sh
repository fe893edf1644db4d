#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fleet ping mesh across network namespaces: five real efawatchd, each in its own namespace,
# joined by a bridge in a "hub" namespace that also runs dnsmasq (the headless Service stand-in).
# Agents 1-3 discover peers through DNS, agents 4-5 through a static list.
#   1. every agent reaches its 4 peers (named by node, DNS ones too)
#   2. agent 3 SIGKILLed -> every pinger reports loss to it within two intervals; a real
#      Prometheus in the hub, loaded with the shipped rules (when given), names it as the suspect
#   3. agent 3 restarted -> its pingers see it again
#   4. agent 2's link cut -> agent 2 raises self-suspicion; the others do not; link back -> clears
#   5. collectives (host backend) across three namespaces: data-checked all_reduce and all_gather
# Usage: mesh_netns_test.sh path/to/efawatchd path/to/efawatch [path/to/rules.yml]
set -euo pipefail

AGENT=$(realpath "${1:?usage: $0 path/to/efawatchd path/to/efawatch [rules.yml]}")
CLI=$(realpath "${2:?usage: $0 path/to/efawatchd path/to/efawatch [rules.yml]}")
RULES=${3:-}
# shellcheck source=tests/netns/lib.sh
source "$(dirname "$0")/../lib.sh"
require_netns "curl:scrapes the agents"
DNSMASQ=$(command -v dnsmasq || true)
[[ -z $DNSMASQ && -x /usr/sbin/dnsmasq ]] && DNSMASQ=/usr/sbin/dnsmasq
[[ -n $DNSMASQ ]] || skip "dnsmasq not installed (Debian: dnsmasq-base)"

N=5
INTERVAL_MS=1500
TAG=$(($$ % 100000))
NET=10.203.$(($$ % 200))
HUB=efm-hub-$TAG
NAME=efawatch.mesh.test
WORK=$(mktemp -d)
declare -A PIDS=()
ns() { echo "efm-$TAG-$1"; }
ipof() { echo "$NET.$1"; }
veth() { echo "m${TAG}a$1"; }
cleanup() {
  for i in "${!PIDS[@]}"; do kill -9 "${PIDS[$i]}" 2>/dev/null || true; done
  [[ -f $WORK/dnsmasq.pid ]] && kill "$(cat "$WORK/dnsmasq.pid")" 2>/dev/null || true
  [[ -f $WORK/prom.pid ]] && kill "$(cat "$WORK/prom.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  for i in $(seq $N); do
    ip netns del "$(ns "$i")" 2>/dev/null || true
    rm -rf "/etc/netns/$(ns "$i")"
  done
  ip netns del "$HUB" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

ip netns add "$HUB" || skip "cannot create network namespaces here"
ip -n "$HUB" link set lo up
ip -n "$HUB" link add br0 type bridge
ip -n "$HUB" addr add "$NET.254/24" dev br0
ip -n "$HUB" link set br0 up
: >"$WORK/hosts"
for i in $(seq $N); do
  ip netns add "$(ns "$i")"
  ip link add "$(veth "$i")" netns "$(ns "$i")" type veth peer name "h${TAG}b$i" netns "$HUB"
  ip -n "$HUB" link set "h${TAG}b$i" master br0 up
  ip -n "$(ns "$i")" addr add "$(ipof "$i")/24" dev "$(veth "$i")"
  ip -n "$(ns "$i")" link set lo up
  ip -n "$(ns "$i")" link set "$(veth "$i")" up
  # `ip netns exec` bind-mounts /etc/netns/NAME/resolv.conf over /etc/resolv.conf.
  mkdir -p "/etc/netns/$(ns "$i")"
  echo "nameserver $NET.254" >"/etc/netns/$(ns "$i")/resolv.conf"
  echo "$(ipof "$i") $NAME" >>"$WORK/hosts"  # the headless Service lists every agent
done
ip netns exec "$HUB" "$DNSMASQ" --keep-in-foreground --no-resolv --no-hosts --user=root \
  --addn-hosts="$WORK/hosts" --listen-address="$NET.254" --bind-interfaces \
  --pid-file="$WORK/dnsmasq.pid" --log-facility="$WORK/dnsmasq.log" &
for i in $(seq $N); do
  for _ in $(seq 50); do
    ip -n "$(ns "$i")" link show "$(veth "$i")" | grep -q LOWER_UP && break
    sleep 0.1
  done
done
for _ in $(seq 50); do [[ -s $WORK/dnsmasq.pid ]] && break; sleep 0.1; done
ip netns exec "$(ns 1)" getent ahostsv4 "$NAME" | grep -q "$(ipof 1)" ||
  { cat "$WORK/dnsmasq.log" 2>/dev/null; echo "FAIL: dnsmasq does not answer"; exit 1; }

STATIC="mesh-1=$(ipof 1):9478,mesh-2=$(ipof 2):9478,mesh-3=$(ipof 3):9478"
STATIC+=",mesh-4=$(ipof 4):9478,mesh-5=$(ipof 5):9478"
start_agent() {
  local i=$1 discovery
  if [[ $i -le 3 ]]; then discovery=(--mesh-discovery=dns --mesh-dns-name="$NAME")
  else discovery=(--mesh-discovery=static --mesh-peers="$STATIC"); fi
  mkdir -p "$WORK/$i/pods" "$WORK/$i/state" "$WORK/$i/sys"
  ip netns exec "$(ns "$i")" "$AGENT" --node-name="mesh-$i" --pod-ip="$(ipof "$i")" \
    --grpc-listen="$(ipof "$i"):9478" --grpc-insecure --metrics-listen=":9477" \
    --fabric-providers=tcp --fabric-interface="$(veth "$i")" \
    --pod-log-root="$WORK/$i/pods" --state-dir="$WORK/$i/state" --sysfs-root="$WORK/$i/sys" \
    "${discovery[@]}" --mesh-interval-ms=$INTERVAL_MS --mesh-discovery-interval-ms=2000 \
    --mesh-count=5 --mesh-message-timeout-ms=200 >>"$WORK/agent$i.log" 2>&1 &
  PIDS[$i]=$!
}
for i in $(seq $N); do start_agent "$i"; done
# 1 for an agent `name` scrapes: metrics line value (or "none").
metric() {  # metric <agent> <series regex>
  ip netns exec "$(ns "$1")" curl -s --max-time 2 "http://127.0.0.1:9477/metrics" 2>/dev/null |
    awk -v re="^$2 " '$0 ~ re {print $NF; found=1} END {if (!found) print "none"}' | head -1
}
wait_for() {  # wait_for <seconds> <description> <command...>: polls every 0.2 s
  local secs=$1 what=$2; shift 2
  local start=$SECONDS deadline=$((SECONDS + secs))
  while ((SECONDS < deadline)); do
    if "$@"; then echo "PASS: $what ($((SECONDS - start)) s)"; return 0; fi
    sleep 0.2
  done
  echo "FAIL: $what (not within $secs s)"; FAILED=1; return 1
}
FAILED=0
dump() {
  for i in $(seq $N); do
    echo "--- agent $i"
    tail -n 8 "$WORK/agent$i.log"
    ip netns exec "$(ns "$i")" curl -s --max-time 2 http://127.0.0.1:9477/metrics 2>/dev/null |
      grep -E '^efawatch_mesh_(peer_up|peers_|self|discovery_errors)' || true
  done
}

all_reach_all() {
  for i in $(seq $N); do
    [[ $(metric "$i" efawatch_mesh_peers_expected) == 4 ]] || return 1
    [[ $(metric "$i" efawatch_mesh_peers_reachable) == 4 ]] || return 1
    for j in $(seq $N); do
      [[ $i == "$j" ]] && continue
      [[ $(metric "$i" "efawatch_mesh_peer_up\\{peer_node=\"mesh-$j\"\\}") == 1 ]] || return 1
    done
  done
}
wait_for 40 "every agent reaches its 4 peers, by node name (DNS: agents 1-3, static: 4-5)" \
  all_reach_all || { dump; exit 1; }

if [[ -n $RULES ]] && command -v prometheus >/dev/null; then
  # A real Prometheus in the hub scrapes every agent (target label node = the agent's node, as
  # the DaemonSet's relabelling does) and evaluates the shipped rules with short `for:`.
  sed -E 's/^([[:space:]]*)for: .*/\1for: 0s/' "$RULES" >"$WORK/rules.yml"
  {
    echo "global: {scrape_interval: 1s, evaluation_interval: 1s}"
    echo "rule_files: [$WORK/rules.yml]"
    echo "scrape_configs:"
    echo "  - job_name: efawatch"
    echo "    static_configs:"
    for i in $(seq $N); do
      echo "      - {targets: ['$(ipof "$i"):9477'], labels: {node: mesh-$i}}"
    done
  } >"$WORK/prometheus.yml"
  ip netns exec "$HUB" prometheus --config.file="$WORK/prometheus.yml" \
    --storage.tsdb.path="$WORK/tsdb" --web.listen-address=127.0.0.1:9090 \
    >"$WORK/prom.log" 2>&1 &
  echo $! >"$WORK/prom.pid"
  PROM=1
else
  echo "NOTE: no rules file or no prometheus: suspect-node rule not evaluated here"
  PROM=0
fi
prom_query() {  # prom_query <promql>: prints the JSON result list
  ip netns exec "$HUB" curl -s --max-time 2 "http://127.0.0.1:9090/api/v1/query" \
    --data-urlencode "query=$1" 2>/dev/null
}

echo "== SIGKILL agent 3"
lost_before=()
for i in 1 2 4 5; do
  lost_before[$i]=$(metric "$i" 'efawatch_mesh_peer_lost_total\{peer_node="mesh-3"\}')
done
kill -9 "${PIDS[3]}"
wait "${PIDS[3]}" 2>/dev/null || true
unset 'PIDS[3]'
killed_at=$(date +%s.%N)
pingers_report_loss() {
  for i in 1 2 4 5; do
    [[ $(metric "$i" 'efawatch_mesh_peer_up\{peer_node="mesh-3"\}') == 0 ]] || return 1
    local now
    now=$(metric "$i" 'efawatch_mesh_peer_lost_total\{peer_node="mesh-3"\}')
    awk -v a="$now" -v b="${lost_before[$i]}" 'BEGIN {exit !(a > b)}' || return 1
  done
}
deadline=$((2 * INTERVAL_MS / 1000 + 10))
while ! pingers_report_loss && (($(date +%s) < ${killed_at%.*} + deadline)); do sleep 0.1; done
took=$(awk -v a="$(date +%s.%N)" -v b="$killed_at" 'BEGIN {printf "%.2f", a - b}')
# Two intervals, plus one poll of the four agents' metrics (each scrape can take a moment on a
# loaded machine).
limit=$(awk -v i=$INTERVAL_MS 'BEGIN {printf "%.2f", 2 * i / 1000 + 1.0}')
if pingers_report_loss && awk -v t="$took" -v l="$limit" 'BEGIN {exit !(t <= l)}'; then
  echo "PASS: all 4 pingers report loss to mesh-3 after $took s (limit: 2 intervals = $((2 * INTERVAL_MS)) ms + 1 s polling)"
else
  echo "FAIL: pingers did not all report loss to mesh-3 within $limit s (took $took s)"; FAILED=1
fi
for i in 1 2 4 5; do
  [[ $(metric "$i" efawatch_mesh_self_suspect) == 0 ]] ||
    { echo "FAIL: agent $i suspects itself while only mesh-3 is down"; FAILED=1; }
done
if ((PROM)); then
  suspect_named() {
    prom_query 'ALERTS{alertname="EfawatchFabricSuspectNode",alertstate="firing"}' |
      grep -q '"peer_node":"mesh-3"'
  }
  wait_for 60 "Prometheus fires EfawatchFabricSuspectNode naming mesh-3" suspect_named ||
    prom_query 'ALERTS' | head -c 2000
fi

echo "== restart agent 3"
start_agent 3
pingers_see_3() {
  for i in 1 2 4 5; do
    [[ $(metric "$i" 'efawatch_mesh_peer_up\{peer_node="mesh-3"\}') == 1 ]] || return 1
  done
}
wait_for 30 "all 4 pingers reach mesh-3 again" pingers_see_3
if ((PROM)); then
  suspect_cleared() {
    ! prom_query 'ALERTS{alertname="EfawatchFabricSuspectNode",alertstate="firing"}' |
      grep -q '"peer_node":"mesh-3"'
  }
  wait_for 120 "EfawatchFabricSuspectNode for mesh-3 resolves" suspect_cleared
fi

echo "== cut agent 2's link"
ip -n "$(ns 2)" link set "$(veth 2)" down
self_suspect() {
  [[ $(metric 2 efawatch_mesh_self_suspect) == 1 ]] &&
    [[ $(metric 2 'efawatch_findings\{kind="mesh_self_suspect",severity="critical",namespace="",pod=""\}') == 1 ]]
}
wait_for 30 "agent 2 raises mesh_self_suspect" self_suspect
for i in 1 3 4 5; do
  [[ $(metric "$i" efawatch_mesh_self_suspect) == 0 ]] ||
    { echo "FAIL: agent $i suspects itself while mesh-2 is cut off"; FAILED=1; }
done
ip -n "$(ns 2)" link set "$(veth 2)" up
self_clear() { [[ $(metric 2 efawatch_mesh_self_suspect) == 0 ]]; }
wait_for 30 "agent 2's self-suspicion clears when its link is back" self_clear

echo "== collectives across namespaces (host backend, agents 1, 3, 4)"
PARTS="$(ipof 1):9478,$(ipof 3):9478,$(ipof 4):9478"
for op in all_reduce all_gather; do
  if ip netns exec "$HUB" "$CLI" collective --agents "$PARTS" --op "$op" --sizes 64K:4M:4 \
    --iters 5 --deadline-ms 60000 >"$WORK/coll-$op.txt" 2>&1 &&
    grep -q "Data check: OK (0 wrong elements)" "$WORK/coll-$op.txt" &&
    grep -q "3 ranks on mesh-1, mesh-3, mesh-4" "$WORK/coll-$op.txt"; then
    echo "PASS: $op across three namespaces: $(grep 'Avg bus bandwidth' "$WORK/coll-$op.txt")"
  else
    echo "FAIL: $op across three namespaces"; cat "$WORK/coll-$op.txt"; FAILED=1
  fi
done

for i in "${!PIDS[@]}"; do
  kill -0 "${PIDS[$i]}" 2>/dev/null || { echo "FAIL: agent $i died"; tail -n 5 "$WORK/agent$i.log"; FAILED=1; }
done
if ((FAILED)); then dump; exit 1; fi
echo "mesh netns test: all checks passed"
