#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The image as CI builds it (scripts/build-image.sh, buildah from scratch over this build's
# binaries), run with buildah under chroot isolation on the host network:
#   1. the image's entrypoint, user and contents (no shell; every library it holds listed)
#   2. `efawatchd --version` inside prints what the host binary prints; `efawatch analyze`
#      inside reads an NCCL fixture log
#   3. the agent inside, over the p5.48xlarge sysfs fixture, a pod log tree with a TCP fallback
#      and a fake Kubernetes API server (HTTPS, on the host): the host scrapes /metrics
#      (efawatch_build_info, every counter of the fixture's golden scrape, the pod's verdict) and
#      /healthz; the Event reaches the API server (libcurl, opened only then, works inside);
#      `efawatch status` inside (efawatch execs efawatch-rpc beside it) answers over gRPC;
#      SIGTERM stops it cleanly
#   4. the agent inside with /metrics over HTTPS (GnuTLS), scraped with curl from the host
# A library missing from the image fails 2, 3 or 4 (the agent does not start, or the feature
# that opens it fails), not a user's node. Containers, images and storage live under a temporary
# directory (vfs driver) and are removed at exit.
# Needs root, buildah, curl, openssl, python3 and ps (scripts/setup.sh installs them); exits 77
# (skipped) with the reason otherwise.
# Usage: image_agent_test.sh path/to/efawatchd path/to/efawatch path/to/efawatch-rpc
# KEEP_LOGS=DIR keeps the logs (build, agents, API server) there.
set -euo pipefail

usage="usage: $0 path/to/efawatchd path/to/efawatch path/to/efawatch-rpc"
AGENT=$(realpath "${1:?$usage}")
CLI=$(realpath "${2:?$usage}")
RPC=$(realpath "${3:?$usage}")
SRC=$(cd "$(dirname "$0")/../../.." && pwd)

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[[ $(id -u) -eq 0 ]] || skip "needs root (buildah builds and runs the image as root here)"
command -v buildah >/dev/null || skip "buildah not installed (scripts/setup.sh installs it)"
for tool in curl openssl python3 ps; do
  command -v "$tool" >/dev/null || skip "$tool not installed (scripts/setup.sh installs it)"
done
BIN=$(dirname "$AGENT")
[[ $(dirname "$CLI") == "$BIN" && $(dirname "$RPC") == "$BIN" ]] ||
  fail "efawatchd, efawatch and efawatch-rpc must be in one directory (the image takes one)"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
START=$(now_ms)
WORK=$(mktemp -d)
STORE=(--root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs)
bah() { buildah "${STORE[@]}" "$@"; }
CTR=""
RUN_PID=""
SERVER_PID=""
# The agent's own pid (buildah run forwards no signal: SIGTERM to it kills the agent with
# SIGKILL), found among the descendants of buildah run.
agent_pid() {
  local queue=("$RUN_PID") p child
  while ((${#queue[@]})); do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    for child in $(ps -o pid= --ppid "$p"); do
      [[ $(cat "/proc/$child/comm" 2>/dev/null) == efawatchd ]] && { echo "$child"; return 0; }
      queue+=("$child")
    done
  done
  return 1
}

cleanup() {
  if [[ -n $RUN_PID ]]; then
    kill -9 "$(agent_pid)" 2>/dev/null || true
    kill -9 "$RUN_PID" 2>/dev/null || true
  fi
  if [[ -n $SERVER_PID ]]; then kill "$SERVER_PID" 2>/dev/null || true; fi
  wait 2>/dev/null
  if [[ -n $CTR ]]; then
    bah umount "$CTR" >/dev/null 2>&1 || true
    bah rm "$CTR" >/dev/null 2>&1 || true
  fi
  bah rmi --all --force >/dev/null 2>&1 || true
  if [[ -n ${KEEP_LOGS:-} ]]; then cp "$WORK"/*.log "$KEEP_LOGS"/ 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# The end of the current log, each message once (without its time stamp).
log_tail() { tail -n 20 "$LOG" | sed -E 's/^[0-9T:.-]+Z //' | awk '!seen[$0]++'; }

# Polls (a loaded host can take seconds for what takes milliseconds on an idle one).
wait_for() {
  local what=$1 timeout_ms=$2 deadline
  shift 2
  deadline=$(($(now_ms) + timeout_ms))
  until "$@"; do
    (($(now_ms) < deadline)) || return 1
    [[ -z $RUN_PID ]] || kill -0 "$RUN_PID" 2>/dev/null ||
      fail "the agent in the image exited while waiting for $what: $(log_tail)"
    sleep 0.1
  done
}

echo "== build the image (scripts/build-image.sh)"
"$SRC/scripts/build-image.sh" --bin "$BIN" --out "$WORK/efawatchd-image.tar" \
  >"$WORK/build.log" 2>&1 || fail "scripts/build-image.sh: $(cat "$WORK/build.log")"
cat "$WORK/build.log"
CTR=$(bah from --quiet "oci-archive:$WORK/efawatchd-image.tar")

echo "== 1. entrypoint, user and contents"
entry=$(bah inspect --type container --format '{{.OCIv1.Config.Entrypoint}}' "$CTR")
[[ $entry == '[/usr/local/bin/efawatchd]' ]] || fail "entrypoint is $entry"
user=$(bah inspect --type container --format '{{.OCIv1.Config.User}}' "$CTR")
[[ $user == 65532:65532 ]] || fail "user is '$user', not the non-root 65532 of deploy/Dockerfile"
MNT=$(bah mount "$CTR")
for b in efawatchd efawatch efawatch-rpc; do
  [[ -x $MNT/usr/local/bin/$b ]] || fail "/usr/local/bin/$b missing"
done
for sh in bin/sh usr/bin/sh bin/bash usr/bin/bash; do
  [[ ! -e $MNT/$sh ]] || fail "the image has a shell: /$sh"
done
(cd "$MNT" && find . -name '*.so*' \( -type f -o -type l \) | sed 's|^\.||' | sort) \
  >"$WORK/libraries"
echo "image: $(grep -c . <"$WORK/libraries") library names (files and links), $(
  cd "$MNT" && find . -name '*.so*' -type f | wc -l) library files, $(
  du -sh --apparent-size "$MNT" | cut -f1) unpacked"
grep -q '/libefa-rdmav[0-9]*\.so$' "$WORK/libraries" || fail "no libefa verbs provider"
[[ -f $MNT/etc/libibverbs.d/efa.driver ]] || fail "no /etc/libibverbs.d/efa.driver"
bah umount "$CTR" >/dev/null

echo "== 2. versions, and the CLI inside"
want=$("$AGENT" --version)
got=$(bah run --isolation chroot "$CTR" -- efawatchd --version) ||
  fail "efawatchd --version does not run in the image: $got"
echo "host: $want; image: $got"
[[ $got == "$want" ]] || fail "the image's efawatchd prints '$got', the host's '$want'"
revision=$(sed -nE 's/.*\(([^)]+)\).*/\1/p' <<<"$want")
[[ -n $revision ]] || fail "no revision in '$want'"
FALLBACK_LOG=socket-fallback-plugin-missing-2.19.log
got=$(bah run --isolation chroot -v "$SRC/tests/fixtures/nccl:/nccl:ro" "$CTR" -- \
  efawatch analyze "/nccl/$FALLBACK_LOG" 2>&1) || true
grep -q "TCP FALLBACK" <<<"$got" || fail "efawatch analyze in the image: $got"

echo "== 3. the agent inside, scraped from the host"
mkdir -p "$WORK/k8s" "$WORK/pods/train_fallback-0_uid-a/main"
while IFS= read -r line; do
  printf '2026-12-02T10:00:00.000000001Z stdout F %s\n' "$line"
done <"$SRC/tests/fixtures/nccl/$FALLBACK_LOG" >"$WORK/pods/train_fallback-0_uid-a/main/0.log"
(
  cd "$WORK/k8s"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=test-ca
  openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >san.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem \
    -days 1 -extfile san.ext
) >"$WORK/openssl.log" 2>&1 || fail "openssl: $(cat "$WORK/openssl.log")"
echo secret-token >"$WORK/k8s/token"
echo '{"namespaces": {}, "nodes": []}' >"$WORK/k8s/objects.json"
# The agent runs as the image's user: it reads these (a test key, in a directory of this test).
chmod 0644 "$WORK"/k8s/*
python3 "$SRC/tests/component/mesh/fake_apiserver.py" --cert "$WORK/k8s/server.pem" \
  --key "$WORK/k8s/server.key" --token-file "$WORK/k8s/token" \
  --objects "$WORK/k8s/objects.json" --port-file "$WORK/apiserver.port" \
  --request-log "$WORK/requests" >"$WORK/apiserver.log" 2>&1 &
SERVER_PID=$!
LOG="$WORK/apiserver.log"
wait_for "the fake API server" 20000 test -s "$WORK/apiserver.port" ||
  fail "the fake API server did not start: $(cat "$WORK/apiserver.log")"
API="https://127.0.0.1:$(cat "$WORK/apiserver.port")"

# Starts the agent in the image with the test's trees mounted; sets RUN_PID (buildah run),
# LOG, METRICS and GRPC (the ports it bound, from its port file).
start_agent() {
  local name=$1
  shift
  local state="$WORK/$name"
  mkdir -p "$state"
  chmod 0777 "$state"
  LOG="$WORK/$name.log"
  bah run --isolation chroot --network host \
    -v "$SRC/tests/fixtures/sysfs/p5.48xlarge:/host:ro" -v "$WORK/pods:/pods:ro" \
    -v "$WORK/k8s:/k8s:ro" -v "$state:/state" "$CTR" -- \
    efawatchd --metrics-listen=127.0.0.1:0 --grpc-listen=127.0.0.1:0 \
    --port-file=/state/ports.json --sysfs-root=/host/sys --procfs-root=/host/proc \
    --pod-log-root=/pods --state-dir=/state --fabric-providers=tcp --fabric-interface=lo \
    --instance-type=p5.48xlarge "$@" >"$LOG" 2>&1 &
  RUN_PID=$!
  wait_for "its port file" 30000 grep -qs '"grpc"' "$state/ports.json" ||
    fail "the agent in the image wrote no port file: $(log_tail)"
  METRICS=$(sed -nE 's/.*"metrics": ([0-9]+).*/\1/p' "$state/ports.json")
  GRPC=$(sed -nE 's/.*"grpc": ([0-9]+).*/\1/p' "$state/ports.json")
  echo "agent '$name' in the image: metrics on 127.0.0.1:$METRICS, gRPC on 127.0.0.1:$GRPC"
}

# SIGTERM to the agent: it must log "stopped" and buildah run must exit 0 within 20 s.
stop_agent() {
  local pid rc=0
  pid=$(agent_pid) || fail "no efawatchd process under buildah run $RUN_PID"
  kill -TERM "$pid"
  local deadline=$(($(now_ms) + 20000))
  while kill -0 "$RUN_PID" 2>/dev/null; do
    (($(now_ms) < deadline)) || fail "the agent did not stop within 20 s of SIGTERM"
    sleep 0.1
  done
  wait "$RUN_PID" || rc=$?
  RUN_PID=""
  [[ $rc -eq 0 ]] || fail "buildah run exited $rc after SIGTERM: $(log_tail)"
  grep -q ' stopped$' "$LOG" || fail "no clean stop in the agent's log: $(log_tail)"
}

scrape() { curl -sS --max-time 5 "$@" >"$WORK/scrape" 2>&1; }
fallback_and_event() {
  scrape "http://127.0.0.1:$METRICS/metrics" &&
    grep -q '^efawatch_nccl_tcp_fallback{namespace="train",pod="fallback-0",container="main"} 1$' \
      "$WORK/scrape" &&
    grep -q '"reason": "NcclTcpFallback"' "$WORK/requests.writes" 2>/dev/null
}

start_agent plain --mesh-k8s-api="$API" --mesh-k8s-token-file=/k8s/token \
  --mesh-k8s-ca-file=/k8s/ca.pem --kube-signals-interval-ms=200 --node-name=node-a \
  --workload-identity=false
wait_for "the pod's verdict and its Event" 30000 fallback_and_event ||
  fail "no TCP fallback verdict on /metrics, or no Event at the API server (libcurl in the" \
    "image?): $(log_tail); API writes: $(cat "$WORK/requests.writes" 2>/dev/null)"
grep -q "^efawatch_build_info{.*revision=\"$revision\"" "$WORK/scrape" ||
  fail "/metrics has no efawatch_build_info with revision $revision"
grep -v '^efawatch_rdma_device_reads_total' "$SRC/tests/fixtures/sysfs/p5.48xlarge.prom" \
  >"$WORK/golden"
missing=$(grep -Fxv -f "$WORK/scrape" "$WORK/golden" || true)
[[ -z $missing ]] ||
  fail "/metrics lacks lines of the fixture's golden scrape: $(head -n 5 <<<"$missing")"
echo "/metrics: efawatch_build_info (revision $revision), $(wc -l <"$WORK/golden") golden EFA" \
  "lines, the pod's TCP fallback verdict; its Event reached the API server"
code=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$METRICS/healthz")
[[ $code == 200 ]] || fail "/healthz answered $code"
status=$(bah run --isolation chroot --network host "$CTR" -- \
  efawatch status --agent "127.0.0.1:$GRPC" 2>&1) || fail "efawatch status in the image: $status"
echo "efawatch status (in the image): $(head -n 1 <<<"$status")"
stop_agent

echo "== 4. /metrics over HTTPS from the image (GnuTLS)"
start_agent tls --metrics-tls-cert=/k8s/server.pem --metrics-tls-key=/k8s/server.key
scrape --cacert "$WORK/k8s/ca.pem" "https://127.0.0.1:$METRICS/metrics" ||
  fail "HTTPS scrape: $(cat "$WORK/scrape"); agent: $(log_tail)"
grep -q "^efawatch_build_info{.*revision=\"$revision\"" "$WORK/scrape" ||
  fail "HTTPS /metrics has no efawatch_build_info"
stop_agent

echo "image_agent_test: passed in $((($(now_ms) - START) / 1000)) s"
