#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the tests that build the kustomizations need, checked once for both of them
# (manifests_test.sh, compositions_test.sh): kubectl and node on PATH, the npm packages of
# tests/deploy/checks, and a kubectl whose kustomize can build components (kustomize 3.7, kubectl
# 1.21; Debian 12's kubernetes-client is 1.20: docs/deploy.md, "Which kubectl"). Exits 1 with one
# line naming what is missing.
#   kustomize_preflight.sh DIR   (DIR: tests/deploy/checks)
set -euo pipefail
here=$1
for tool in kubectl node; do
  command -v "$tool" >/dev/null || { echo "$tool not found: run scripts/setup.sh" >&2; exit 1; }
done
[ -d "$here/node_modules/kubernetes-models" ] ||
  { echo "tests/deploy/checks/node_modules missing: run scripts/setup.sh" >&2; exit 1; }
minor="$(kubectl version --client -o json 2>/dev/null |
  sed -n 's/.*"minor": *"\([0-9]*\).*/\1/p' | head -n 1)"
if [ "${minor:-0}" -lt 21 ]; then
  echo "kubectl 1.${minor:-?} cannot build kustomize components: the overlays need kubectl 1.21" \
    "or later (docs/deploy.md, \"Which kubectl\")" >&2
  exit 1
fi
