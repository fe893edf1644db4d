#!/usr/bin/env bash
# Times `efawatch analyze` on a generated >= 1 GB NCCL log against `grep -c 'NCCL INFO'` and
# `wc -l` on the same file in the same run, and prints the ratios of wall and of CPU time
# (user+sys) (target: <= 2.0x grep -c).
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

# Best of 3 runs of a command (exit status ignored): sets best_wall and best_cpu (user+sys,
# which other load on the machine disturbs less than wall time), each the minimum over the
# runs. Output goes to a file, not /dev/null: GNU grep notices /dev/null and stops at the
# first match.
best() {
  best_wall=""
  best_cpu=""
  local TIMEFORMAT='%R %U %S'
  for _ in 1 2 3; do
    local t wall cpu
    t=$({ time "$@" > "$tmp/out" 2>&1 || true; } 2>&1)
    wall=$(echo "$t" | awk '{print $1}')
    cpu=$(echo "$t" | awk '{print $2 + $3}')
    if [ -z "$best_wall" ] || [ "$(echo "$wall < $best_wall" | bc -l)" = 1 ]; then best_wall=$wall; fi
    if [ -z "$best_cpu" ] || [ "$(echo "$cpu < $best_cpu" | bc -l)" = 1 ]; then best_cpu=$cpu; fi
  done
}

best grep -c 'NCCL INFO' "$tmp/nccl.log"
t_grep=$best_wall c_grep=$best_cpu
grep_count=$(cat "$tmp/out")
best wc -l "$tmp/nccl.log"
t_wc=$best_wall c_wc=$best_cpu
best "$bin" analyze "$tmp/nccl.log"
t_ew=$best_wall c_ew=$best_cpu
bytes=$(stat -c %s "$tmp/nccl.log")
lines=$(wc -l < "$tmp/nccl.log")
printf 'file: %d bytes, %d lines; load average %s\n' "$bytes" "$lines" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '                  wall (best of 3)   cpu user+sys (best of 3)\n'
printf 'grep -c:          %6.3f s           %6.3f s   (%s matching lines)\n' "$t_grep" "$c_grep" \
  "$grep_count"
printf 'wc -l:            %6.3f s           %6.3f s\n' "$t_wc" "$c_wc"
printf 'efawatch analyze: %6.3f s           %6.3f s   (%.0f MB/s wall)\n' "$t_ew" "$c_ew" \
  "$(echo "$bytes / $t_ew / 1000000" | bc -l)"
printf 'ratio efawatch / grep -c: wall %.2f, cpu %.2f (target <= 2.00)\n' \
  "$(echo "$t_ew / $t_grep" | bc -l)" "$(echo "$c_ew / $c_grep" | bc -l)"
"$bin" analyze "$tmp/nccl.log" | head -1 || true
