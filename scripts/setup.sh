#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what building, running and testing efawatch needs, from Debian 12 packages.
# Idempotent and fast when everything is already there: apt runs only for missing packages.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config ccache git
  # libraries
  libfabric-dev prometheus-cpp-dev libgrpc++-dev libprotobuf-dev protobuf-compiler
  protobuf-compiler-grpc libspdlog-dev libabsl-dev nlohmann-json3-dev libcli11-dev zlib1g-dev libcurl4-openssl-dev
  libmicrohttpd-dev libgnutls28-dev
  libgtest-dev libgmock-dev googletest
  # checks: formatting, lint, fuzzing (clang's libFuzzer and sanitizer runtimes)
  clang clang-format clang-tidy libclang-rt-14-dev
  # tests and benchmarks: promtool/prometheus, amtool/alertmanager, libfabric's fabtests tools,
  # certificates, network namespaces and fault injection, reference tools
  prometheus prometheus-alertmanager libfabric-bin openssl iproute2 nftables iptables iperf3 curl procps python3 python3-yaml time dnsmasq-base
  # the image (scripts/build-image.sh, tests/image): buildah builds it from scratch and runs it
  # (chroot isolation, vfs storage: no daemon, no runc); the verbs providers (libefa) go into it
  buildah ibverbs-providers
)
# Deploy checks (tests/deploy): `kubectl kustomize` builds the manifests, node runs the schema
# validation. Debian packages kubectl as kubernetes-client; a kubectl or node already on PATH
# (another vendor's package) is used as it is, since the packages conflict.
command -v kubectl >/dev/null || packages+=(kubernetes-client)
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages of the deploy checks, pinned by their package-lock.json; installed again only when
# the lock file changed.
checks="$(cd "$(dirname "$0")/.." && pwd)/tests/deploy/checks"
if ! cmp -s "$checks/package-lock.json" "$checks/node_modules/.efawatch-installed-lock"; then
  echo "setup: npm ci in tests/deploy/checks"
  (cd "$checks" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$checks/package-lock.json" "$checks/node_modules/.efawatch-installed-lock"
fi
echo "setup: all packages present"
