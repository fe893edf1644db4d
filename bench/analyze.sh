#!/usr/bin/env bash
# Times `efawatch analyze` on a generated >= 1 GB NCCL log against `grep -c 'NCCL INFO'` and
# `wc -l` on the same file in the same run, and prints the ratios of wall and of CPU time
# (user+sys) (target: <= 2.0x grep -c, in wall time). efawatch analyzes a file this large on one
# thread per CPU (grep -c uses one): the wall ratio is what a user waits, the CPU ratio what the
# machine pays; both are printed. THREADS=n passes --threads n.
# Usage: bench/analyze.sh [path/to/efawatch]   (SIZE_MB=1100, ROUNDS=5 by default; LOG=file
# reuses a log generated before instead of writing a new one; BASELINE=path/to/older/efawatch
# times an earlier build in the same rounds and prints its ratio too, for "no worse than before")
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=${1:-$root/build/bin/efawatch}
size_mb=${SIZE_MB:-1100}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "${LOG:-}" ]; then
  ln -s "$(realpath "$LOG")" "$tmp/nccl.log"
else
  python3 "$here/gen_nccl_log.py" --fixtures "$root/tests/fixtures/nccl" --size-mb "$size_mb" \
    --out "$tmp/nccl.log"
fi
cat "$tmp/nccl.log" > /dev/null  # page cache warm for every contender

# One run of a command (exit status ignored): sets wall and cpu (user+sys, which other load on
# the machine disturbs less than wall time). Output goes to a file, not /dev/null: GNU grep
# notices /dev/null and stops at the first match.
run() {
  local TIMEFORMAT='%R %U %S' t
  t=$({ time "$@" > "$tmp/out" 2>&1 || true; } 2>&1)
  wall=$(echo "$t" | awk '{print $1}')
  cpu=$(echo "$t" | awk '{print $2 + $3}')
}
min() { if [ -z "$1" ] || [ "$(echo "$2 < $1" | bc -l)" = 1 ]; then echo "$2"; else echo "$1"; fi; }

# The contenders take turns, ROUNDS times (5 by default), and each keeps its best wall and best
# CPU time: on a shared machine the load changes from second to second, and taking turns exposes
# each one to the same load as the others.
rounds=${ROUNDS:-5}
t_grep="" c_grep="" t_wc="" c_wc="" t_ew="" c_ew="" t_base="" c_base=""
for _ in $(seq "$rounds"); do
  run grep -c 'NCCL INFO' "$tmp/nccl.log"
  t_grep=$(min "$t_grep" "$wall") c_grep=$(min "$c_grep" "$cpu")
  grep_count=$(cat "$tmp/out")
  run wc -l "$tmp/nccl.log"
  t_wc=$(min "$t_wc" "$wall") c_wc=$(min "$c_wc" "$cpu")
  run "$bin" analyze ${THREADS:+--threads "$THREADS"} "$tmp/nccl.log"
  t_ew=$(min "$t_ew" "$wall") c_ew=$(min "$c_ew" "$cpu")
  if [ -n "${BASELINE:-}" ]; then
    run "$BASELINE" analyze ${THREADS:+--threads "$THREADS"} "$tmp/nccl.log"
    t_base=$(min "$t_base" "$wall") c_base=$(min "$c_base" "$cpu")
  fi
done
bytes=$(stat -L -c %s "$tmp/nccl.log")
lines=$(wc -l < "$tmp/nccl.log")
printf 'file: %d bytes, %d lines; %s CPUs, efawatch --threads %s; load average %s\n' "$bytes" \
  "$lines" "$(nproc)" "${THREADS:-auto}" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '                  wall (best of %d)   cpu user+sys (best of %d)\n' "$rounds" "$rounds"
printf 'grep -c:          %6.3f s           %6.3f s   (%s matching lines)\n' "$t_grep" "$c_grep" \
  "$grep_count"
printf 'wc -l:            %6.3f s           %6.3f s\n' "$t_wc" "$c_wc"
printf 'efawatch analyze: %6.3f s           %6.3f s   (%.0f MB/s wall)\n' "$t_ew" "$c_ew" \
  "$(echo "$bytes / $t_ew / 1000000" | bc -l)"
printf 'ratio efawatch / grep -c: wall %.2f, cpu %.2f (target <= 2.00)\n' \
  "$(echo "$t_ew / $t_grep" | bc -l)" "$(echo "$c_ew / $c_grep" | bc -l)"
if [ -n "${BASELINE:-}" ]; then
  printf 'baseline analyze: %6.3f s           %6.3f s   (%s)\n' "$t_base" "$c_base" "$BASELINE"
  printf 'ratio baseline / grep -c: wall %.2f, cpu %.2f\n' \
    "$(echo "$t_base / $t_grep" | bc -l)" "$(echo "$c_base / $c_grep" | bc -l)"
fi
"$bin" analyze "$tmp/nccl.log" | head -1 || true
