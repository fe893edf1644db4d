#!/usr/bin/env bash
# Builds every kustomization under deploy/kubernetes with `kubectl kustomize` and validates the
# output against the Kubernetes and Prometheus Operator schemas and the deployment's promises
# (validate_manifests.mjs; among them: the default overlay, eks, requests no EFA device), then
# builds the kustomization docs/deploy.md tells users to write (check_deploy_docs.mjs).
set -euo pipefail
src="${EFAWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)}"
here="$src/tests/deploy/checks"
for tool in kubectl node; do
  command -v "$tool" >/dev/null || { echo "$tool not found: run scripts/setup.sh" >&2; exit 1; }
done
[ -d "$here/node_modules/kubernetes-models" ] ||
  { echo "tests/deploy/checks/node_modules missing: run scripts/setup.sh" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

node "$here/validate_manifests.mjs" --self-test
n=0
while IFS= read -r k; do
  dir="$(dirname "$k")"
  name="$(basename "$dir")"
  # stderr: kustomize v5 warns about the v2-compatible fields the kustomizations keep on purpose.
  if ! kubectl kustomize "$dir" >"$out/$name.yaml" 2>"$out/$name.err"; then
    echo "kubectl kustomize ${dir#"$src"/} failed:" >&2
    cat "$out/$name.err" >&2
    exit 1
  fi
  node "$here/validate_manifests.mjs" "$name" "$out/$name.yaml"
  n=$((n + 1))
done < <(find "$src/deploy/kubernetes" -name kustomization.yaml | sort)
[ "$n" -ge 5 ] || { echo "only $n kustomizations found" >&2; exit 1; }
# The default the README and docs/deploy.md recommend was among them, checked as the default.
[ -s "$out/eks.yaml" ] || { echo "no default overlay deploy/kubernetes/overlays/eks" >&2; exit 1; }
echo "$n kustomizations built and valid"
node "$here/check_deploy_docs.mjs" "$src"
