#!/usr/bin/env bash
# Exits 1 with one line when kubectl's kustomize cannot build components (kustomize 3.7, kubectl
# 1.21): Debian 12's kubernetes-client is 1.20 (docs/deploy.md, "Which kubectl").
set -euo pipefail
minor="$(kubectl version --client -o json 2>/dev/null |
  sed -n 's/.*"minor": *"\([0-9]*\).*/\1/p' | head -n 1)"
if [ "${minor:-0}" -lt 21 ]; then
  echo "kubectl 1.${minor:-?} cannot build kustomize components: the overlays need kubectl 1.21" \
    "or later (docs/deploy.md, \"Which kubectl\")" >&2
  exit 1
fi
