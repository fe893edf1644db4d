#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issues the certificates efawatch's mutual TLS needs, with openssl, for clusters without
# cert-manager (docs/security.md says which to use and how to rotate).
#
#   scripts/make-certs.sh [--out DIR] [--days N] [--new-ca] [--client NAME]... [--secrets NS]
#
# Writes into DIR (default ./efawatch-certs):
#   ca.pem ca.key              the fleet CA; kept and reused on a rerun (rotation of the leaves)
#                              unless --new-ca. ca.key never goes into the cluster.
#   agent.pem agent.key        every agent's certificate: server and client, SAN
#                              DNS:efawatch-agent (the agents' identity, and the name peers
#                              check with --grpc-peer-server-name), DNS:localhost, IP:127.0.0.1
#   operator.pem operator.key  client, SAN DNS:efawatch-operator (probes and collectives)
#   reader.pem reader.key      client, SAN DNS:efawatch-reader (health and findings)
#   NAME.pem NAME.key          client, SAN DNS:NAME, for each --client NAME (give NAME a role
#                              with --grpc-authz-operators or --grpc-authz-readers)
#   secrets.yaml               with --secrets NS: Secrets efawatch-agent-tls (mounted by the
#                              certs-secret component), efawatch-operator-tls, efawatch-reader-tls;
#                              each of type kubernetes.io/tls with ca.crt, in namespace NS
set -euo pipefail

out=./efawatch-certs
days=365
new_ca=0
namespace=""
clients=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --new-ca) new_ca=1; shift ;;
    --client) clients+=("$2"); shift 2 ;;
    --secrets) namespace=$2; shift 2 ;;
    -h | --help) sed -n '3,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "make-certs.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$days" in '' | *[!0-9]*) echo "make-certs.sh: --days must be a number" >&2; exit 2 ;; esac
command -v openssl >/dev/null || { echo "make-certs.sh: openssl not found" >&2; exit 2; }

mkdir -p "$out"
cd "$out"
umask 077

if [ "$new_ca" -eq 1 ] || [ ! -s ca.pem ] || [ ! -s ca.key ]; then
  # The CA signs leaves only (pathlen 0); it lives ten times as long as the leaves, so leaves are
  # rotated many times before the CA is.
  openssl req -x509 -newkey rsa:3072 -nodes -keyout ca.key -out ca.pem -days $((days * 10)) \
    -subj /CN=efawatch-ca -addext basicConstraints=critical,CA:TRUE,pathlen:0 \
    -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
fi

# leaf NAME USAGE SAN: a key and a certificate signed by the CA.
leaf() {
  local name=$1 usage=$2 san=$3
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\nsubjectAltName=%s\n' \
    "$usage" "$san" >"$name.ext"
  openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "/CN=$name" \
    2>/dev/null
  openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$name.pem" \
    -days "$days" -extfile "$name.ext" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

leaf agent serverAuth,clientAuth DNS:efawatch-agent,DNS:localhost,IP:127.0.0.1
leaf operator clientAuth DNS:efawatch-operator
leaf reader clientAuth DNS:efawatch-reader
for c in "${clients[@]+"${clients[@]}"}"; do
  case "$c" in *[!A-Za-z0-9.-]* | '') echo "make-certs.sh: bad client name $c" >&2; exit 2 ;; esac
  leaf "$c" clientAuth "DNS:$c"
done

if [ -n "$namespace" ]; then
  b64() { base64 <"$1" | tr -d '\n'; }
  {
    for s in agent operator reader; do
      cat <<EOF
---
apiVersion: v1
kind: Secret
metadata:
  name: efawatch-$s-tls
  namespace: $namespace
type: kubernetes.io/tls
data:
  ca.crt: $(b64 ca.pem)
  tls.crt: $(b64 "$s.pem")
  tls.key: $(b64 "$s.key")
EOF
    done
  } >secrets.yaml
fi
echo "make-certs.sh: certificates in $(pwd)"
