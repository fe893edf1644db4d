#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes what a refactoring must not change, so two builds can be compared byte for byte:
#   - `efawatch analyze --format json|text` of every fixture log (tests/fixtures/nccl*) and of
#     every shared-corpus log (../shared/nccl-logs, where present);
#   - the agent's /metrics over each sysfs fixture tree, with the fixture logs as pods, less the
#     series that measure the agent itself (times, durations, memory, connections);
#   - `efawatch status --format json` from the same agent, less its start time and durations.
#
#   scripts/golden-outputs.sh BUILD_DIR OUT_DIR        write the outputs
#   scripts/golden-outputs.sh --compare DIR_A DIR_B    one line per file that differs, a summary
#
# Runs agents on loopback only (port 0), each for a few seconds.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"

if [ "${1:-}" = "--compare" ]; then
  a="$2" b="$3" same=0 differ=0
  while IFS= read -r f; do
    if cmp -s "$a/$f" "$b/$f"; then
      same=$((same + 1))
    else
      echo "differs: $f"
      differ=$((differ + 1))
    fi
  done < <(cd "$a" && find . -type f | sort)
  missing=$(comm -13 <(cd "$a" && find . -type f | sort) <(cd "$b" && find . -type f | sort) | wc -l)
  echo "golden outputs: $same identical, $differ differ, $missing only in $b"
  [ "$differ" -eq 0 ] && [ "$missing" -eq 0 ]
  exit
fi

build="$(cd "$1" && pwd)"
out="$2"
mkdir -p "$out/analyze" "$out/metrics" "$out/status"
cli="$build/bin/efawatch"
agent="$build/bin/efawatchd"

logs=()
for f in "$here"/tests/fixtures/nccl/*.log "$here"/tests/fixtures/nccl-fleet/*.log; do logs+=("$f"); done
shared="$here/../shared/nccl-logs"
if [ -d "$shared" ]; then
  while IFS= read -r f; do logs+=("$f"); done < <(find -L "$shared" -type f -name '*.log' | sort)
fi
for f in "${logs[@]}"; do
  case "$f" in
    "$shared"/*) name="shared_$(basename "$f")" ;;
    *) name="$(echo "${f#"$here"/}" | tr '/' '_')" ;;
  esac
  for fmt in json text; do
    "$cli" analyze --format "$fmt" "$f" >"$out/analyze/$name.$fmt" 2>&1 || echo "exit $?" >>"$out/analyze/$name.$fmt"
  done
done

# The agent's own behaviour (timing, memory, listeners, build) is not the verdict's.
volatile='_seconds|_bytes|exposer_|process_|_build_info|connections_total|_duration|scrape_|_timestamp|_memory|_read_|_rss|_cpu'

work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
pods="$work/pods"
for f in "$here"/tests/fixtures/nccl/*.log; do
  pod="$(basename "$f" .log | tr '.' '-')"
  d="$pods/default_${pod}_uid-${pod}/main"
  mkdir -p "$d"
  # CRI lines with a fixed time, as kubelet writes them.
  sed 's/^/2026-01-01T00:00:00.000000000Z stdout F /' "$f" >"$d/0.log"
done

for tree in "$here"/tests/fixtures/sysfs/*/; do
  name="$(basename "$tree")"
  state="$work/state-$name"
  mkdir -p "$state"
  "$agent" --node-name=golden --sysfs-root="$tree/sys" --procfs-root="$tree/proc" \
    --pod-log-root="$pods" --state-dir="$state" --metrics-listen=127.0.0.1:0 \
    --grpc-listen=127.0.0.1:0 --port-file="$state/ports.json" --log-level=error \
    >"$state/agent.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do [ -s "$state/ports.json" ] && break; sleep 0.1; done
  mport="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metrics"])' "$state/ports.json")"
  gport="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["grpc"])' "$state/ports.json")"
  # Until two scrapes a second apart agree: every fixture log read.
  prev=""
  for _ in $(seq 30); do
    sleep 1
    cur="$(curl -sf "http://127.0.0.1:$mport/metrics" | grep -v '^#' | grep -Ev "$volatile" | sort || true)"
    [ -n "$cur" ] && [ "$cur" = "$prev" ] && break
    prev="$cur"
  done
  echo "$cur" | sed "s|$work|WORK|g" >"$out/metrics/$name.prom"
  "$cli" status --agent "127.0.0.1:$gport" --format json |
    python3 -c '
import json, sys
def scrub(x):
    if isinstance(x, dict):
        return {k: scrub(v) for k, v in x.items()
                if not any(s in k for s in ("time", "duration", "revision", "agent_version", "seen", "last_run"))}
    if isinstance(x, list):
        return [scrub(v) for v in x]
    return x
print(json.dumps(scrub(json.load(sys.stdin)), indent=1, sort_keys=True))' |
    sed "s|$work|WORK|g" >"$out/status/$name.json"
  kill "$pid"
  wait "$pid" || true
done
echo "golden outputs: $(find "$out" -type f | wc -l) files in $out"
