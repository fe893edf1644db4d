#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The manifest validator's self-test (validate_manifests.mjs: each of its rules rejects a broken
# object), then the kustomizations docs/deploy.md tells users to write, built as written, with
# nothing on stderr, and validated (check_deploy_docs.mjs). Every shipped overlay and tested
# combination is compositions_test.sh's.
set -euo pipefail
src="${EFAWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)}"
here="$src/tests/deploy/checks"
bash "$here/kustomize_preflight.sh" "$here"
node "$here/validate_manifests.mjs" --self-test
node "$here/check_deploy_docs.mjs" "$src"
