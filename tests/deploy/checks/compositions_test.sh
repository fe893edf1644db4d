#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Renders every overlay and every combination of components docs/deploy.md documents, each with
# `kubectl kustomize` and nothing on stderr, and validates each rendering: the schemas, Secrets
# that nothing creates, plaintext gRPC off the pod, the default's promises, and the rest of
# validate_manifests.mjs (compositions.mjs says what else).
set -euo pipefail
src="${EFAWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)}"
here="$src/tests/deploy/checks"
bash "$here/kustomize_preflight.sh" "$here"
node "$here/compositions.mjs" "$src"
