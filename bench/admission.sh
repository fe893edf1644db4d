#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Latency of one admission review: efawatch-admission on 127.0.0.1 with a throwaway CA's
# certificate, N reviews (default 1000) sent one after another by one curl over a kept-alive
# HTTPS connection, as the API server sends them. Two pods: the well-set p5.48xlarge pod (no
# finding) and a PyTorchJob worker with a mistake (a warning to build). Reference, measured in
# the same run on the same connection: GET /healthz of the same server, which does no work, so
# the difference is the review itself. Prints p50 and p99 of each; target p99 < 10 ms (the API
# server's timeout for the webhook is 2 s: docs/admission.md).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
bin=${EFAWATCH_ADMISSION_BIN:-build/bin/efawatch-admission}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }; rm -rf "$tmp"' EXIT
command -v openssl >/dev/null && command -v curl >/dev/null || {
  echo "admission bench: needs openssl and curl" >&2
  exit 2
}
(
  cd "$tmp"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=bench-ca
  openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost
  printf 'subjectAltName=IP:127.0.0.1\n' > san.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem \
    -days 1 -extfile san.ext
) > /dev/null 2>&1
"$bin" --listen 127.0.0.1:0 --tls-cert "$tmp/server.pem" --tls-key "$tmp/server.key" \
  > "$tmp/log" 2>&1 &
pid=$!
port=
for _ in $(seq 100); do
  port=$(sed -nE 's/.*\(port ([0-9]+)\).*/\1/p' "$tmp/log" | head -1)
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { echo "admission bench: the webhook did not start: $(cat "$tmp/log")" >&2; exit 1; }
url="https://127.0.0.1:$port"

review() {  # review POD_JSON_FILE OUT: an AdmissionReview v1 around the pod
  python3 - "$1" > "$2" <<'PY'
import json, sys
pod = json.load(open(sys.argv[1]))
print(json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "request": {"uid": "bench", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                              "namespace": "ml", "operation": "CREATE", "object": pod}}))
PY
}
review tests/fixtures/admission/well_set_p5.json "$tmp/good.json"
python3 - tests/fixtures/admission/pytorchjob_worker_p5.json > "$tmp/bad_pod.json" <<'PY'
import json, sys
pod = json.load(open(sys.argv[1]))
pod["spec"]["containers"][0]["env"].append({"name": "NCCL_SOCKET_IFNAME", "value": "lo"})
print(json.dumps(pod))
PY
review "$tmp/bad_pod.json" "$tmp/bad.json"

# One curl, N transfers on one kept-alive connection; prints each transfer's total seconds.
times() {  # times NAME [BODY]
  local conf="$tmp/$1.conf"
  : > "$conf"
  for i in $(seq "$n"); do
    [ "$i" -gt 1 ] && echo next >> "$conf"
    {
      echo "cacert = \"$tmp/ca.pem\""
      echo "output = \"/dev/null\""
      echo "silent"
      echo "write-out = \"%{http_code} %{time_total}\\n\""
      if [ -n "${2:-}" ]; then
        echo "url = \"$url/validate-pods\""
        echo "header = \"Content-Type: application/json\""
        echo "data-binary = \"@$2\""
      else
        echo "url = \"$url/healthz\""
      fi
    } >> "$conf"
  done
  curl --no-progress-meter -K "$conf" > "$tmp/$1.out"
  if grep -qv '^200 ' "$tmp/$1.out"; then
    echo "admission bench: $1: a request did not get 200" >&2
    exit 1
  fi
  # The first transfer pays for the TLS handshake: left out.
  tail -n +2 "$tmp/$1.out" | awk '{ print $2 }' | sort -n > "$tmp/$1.sorted"
}
pct() { awk -v p="$2" '{ a[NR] = $1 } END { i = int(NR * p / 100); if (i < 1) i = 1; printf "%.3f", a[i] * 1000 }' "$1"; }

cpu() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
times healthz
c0=$(cpu)
times good "$tmp/good.json"
times bad "$tmp/bad.json"
c1=$(cpu)
hz=$(getconf CLK_TCK)
for what in healthz good bad; do
  printf '%-8s p50 %s ms  p99 %s ms\n' "$what" "$(pct "$tmp/$what.sorted" 50)" \
    "$(pct "$tmp/$what.sorted" 99)"
done
awk -v g="$(pct "$tmp/good.sorted" 99)" -v b="$(pct "$tmp/bad.sorted" 99)" \
  -v r="$(pct "$tmp/healthz.sorted" 99)" -v c0="$c0" -v c1="$c1" -v hz="$hz" -v n="$n" 'BEGIN {
  worst = g > b ? g : b
  printf "review p99 %.3f ms over %d reviews a pod (target < 10 ms): %s; ratio to /healthz p99 %.2fx; "\
         "webhook CPU %.3f ms a review\n", worst, n, worst < 10 ? "ok" : "OVER", worst / r,
         1000 * (c1 - c0) / hz / (2 * n)
  exit worst < 10 ? 0 : 1 }'
