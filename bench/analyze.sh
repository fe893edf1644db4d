#!/usr/bin/env bash
# Times `efawatch analyze` on a generated >= 1 GB NCCL log against `grep -c 'NCCL INFO'` and
# `wc -l` on the same file in the same run, and prints the ratio (target: <= 2.0x grep -c).
# Usage: bench/analyze.sh [path/to/efawatch]   (SIZE_MB=1100 by default)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=${1:-$root/build/bin/efawatch}
size_mb=${SIZE_MB:-1100}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 "$here/gen_nccl_log.py" --fixtures "$root/tests/fixtures/nccl" --size-mb "$size_mb" \
  --out "$tmp/nccl.log"
cat "$tmp/nccl.log" > /dev/null  # page cache warm for every contender

# Best of 3 wall-clock seconds of a command (exit status ignored). Output goes to a file, not
# /dev/null: GNU grep notices /dev/null and stops at the first match.
best() {
  local best_t=""
  for _ in 1 2 3; do
    local s e t
    s=$(date +%s.%N)
    "$@" > "$tmp/out" 2>&1 || true
    e=$(date +%s.%N)
    t=$(echo "$e - $s" | bc -l)
    if [ -z "$best_t" ] || [ "$(echo "$t < $best_t" | bc -l)" = 1 ]; then best_t=$t; fi
  done
  printf '%.3f' "$best_t"
}

t_grep=$(best grep -c 'NCCL INFO' "$tmp/nccl.log")
grep_count=$(cat "$tmp/out")
t_wc=$(best wc -l "$tmp/nccl.log")
t_ew=$(best "$bin" analyze "$tmp/nccl.log")
bytes=$(stat -c %s "$tmp/nccl.log")
lines=$(wc -l < "$tmp/nccl.log")
ratio=$(echo "$t_ew / $t_grep" | bc -l)
printf 'file: %d bytes, %d lines\n' "$bytes" "$lines"
printf 'grep -c:          %6.3f s (%s matching lines)\n' "$t_grep" "$grep_count"
printf 'wc -l:            %6.3f s\n' "$t_wc"
printf 'efawatch analyze: %6.3f s (%.0f MB/s)\n' "$t_ew" "$(echo "$bytes / $t_ew / 1000000" | bc -l)"
printf 'ratio efawatch / grep -c: %.2f (target <= 2.00)\n' "$ratio"
"$bin" analyze "$tmp/nccl.log" | head -1 || true
