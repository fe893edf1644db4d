#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates the docs that come from the agent itself: docs/metrics.md (the metric table) and
# the flag block of docs/configuration.md (efawatchd --help). Unit tests fail when they drift.
#   scripts/regen-docs.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}/bin/efawatchd
"$bin" --print-metrics-doc >docs/metrics.md
help=$("$bin" --help)
python3 - "$help" <<'PY'
import sys
doc = open("docs/configuration.md").read()
start = doc.index("```\n") + 4
end = doc.index("```\n", start)
open("docs/configuration.md", "w").write(doc[:start] + sys.argv[1] + "\n" + doc[end:])
PY
