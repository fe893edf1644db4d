#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Validates every manifest under deploy/examples (validate_examples.mjs says how).
set -euo pipefail
src="${EFAWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)}"
here="$src/tests/deploy/checks"
command -v node >/dev/null || { echo "node not found: run scripts/setup.sh" >&2; exit 1; }
[ -d "$here/node_modules/kubernetes-models" ] ||
  { echo "tests/deploy/checks/node_modules missing: run scripts/setup.sh" >&2; exit 1; }
node "$here/validate_examples.mjs" --self-test
mapfile -t files < <(find "$src/deploy/examples" -name '*.yaml' | sort)
[ "${#files[@]}" -ge 1 ] || { echo "no examples under deploy/examples" >&2; exit 1; }
node "$here/validate_examples.mjs" "${files[@]}"
