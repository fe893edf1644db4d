#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Times `efawatch analyze` against `grep -c` and `wc -l` on the same file in the same run, on two
# logs, and prints the ratios of wall and of CPU time (user+sys):
#   all-NCCL  a generated NCCL log (SIZE_MB, default 1100), against grep -c 'NCCL INFO'
#             (targets: single thread <= 2.5x, default threads <= 2.0x, wall)
#   2%-NCCL   a chatty pod's log (CHATTY_MB, default 400): 49 training lines for each NCCL line,
#             against grep -c NCCL (target: single thread <= 2.0x, wall)
#   shapes    the same log as every shape bench/gen_shapes.py writes (CHATTY_MB each): Trainer's
#             dicts (first line an NCCL line or a dict), CRI, docker json-file, and behind each
#             console/shipper envelope (target: single thread <= 2.0x, wall); SHAPES=a,b picks
#             some. A table of all ratios ends the run.
# efawatch runs with --threads 1 and with its default (one per CPU for a file this large; grep
# uses one): the wall ratio is what a user waits, the CPU ratio what the machine pays.
# Usage: bench/analyze.sh [path/to/efawatch]   (ROUNDS=5 by default; LOG=file reuses a generated
# NCCL log instead of writing a new one; BASELINE=path/to/older/efawatch times an earlier build in
# the same rounds and prints its ratio too, for "no worse than before"; THREADS=n replaces the
# default-threads run's thread count; LOGS=chatty runs only the 2%-NCCL shapes, LOGS=nccl only
# the all-NCCL log)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=${1:-$root/build/bin/efawatch}
size_mb=${SIZE_MB:-1100}
chatty_mb=${CHATTY_MB:-400}
logs=",${LOGS:-nccl,chatty},"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "${LOG:-}" ]; then
  ln -s "$(realpath "$LOG")" "$tmp/nccl.log"
else
  python3 "$here/gen_nccl_log.py" --fixtures "$root/tests/fixtures/nccl" --size-mb "$size_mb" \
    --out "$tmp/nccl.log"
fi
# The 2 %-NCCL pod logs, one per shape (bench/gen_shapes.py): each NCCL line followed by 49 lines
# of training output, plain or as Trainer's dicts, stored by CRI or docker, or behind each
# console or shipper envelope the analyzer unwraps. SHAPES=a,b picks some.
shapes=${SHAPES:-chatty,trainer,trainer-dict,cri,docker-json,kubectl-ts,kubectl-prefix,ray,mpi,crlf,ansi,compose,syslog,stern,pylog,tab,bom}
summary=()

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
# bench_log NAME LOG PATTERN: the contenders on LOG, taking turns ROUNDS times.
bench_log() {
  local name=$1 log=$2 pattern=$3
  cat "$log" > /dev/null  # page cache warm for every contender
  t_grep="" c_grep="" t_wc="" c_wc="" t_one="" c_one="" t_ew="" c_ew="" t_base="" c_base=""
  for _ in $(seq "$rounds"); do
    run grep -c "$pattern" "$log"
    t_grep=$(min "$t_grep" "$wall") c_grep=$(min "$c_grep" "$cpu")
    grep_count=$(cat "$tmp/out")
    run wc -l "$log"
    t_wc=$(min "$t_wc" "$wall") c_wc=$(min "$c_wc" "$cpu")
    run "$bin" analyze --threads 1 "$log"
    t_one=$(min "$t_one" "$wall") c_one=$(min "$c_one" "$cpu")
    run "$bin" analyze ${THREADS:+--threads "$THREADS"} "$log"
    t_ew=$(min "$t_ew" "$wall") c_ew=$(min "$c_ew" "$cpu")
    if [ -n "${BASELINE:-}" ]; then
      run "$BASELINE" analyze --threads 1 "$log"
      t_base=$(min "$t_base" "$wall") c_base=$(min "$c_base" "$cpu")
    fi
  done
  local bytes lines
  bytes=$(stat -L -c %s "$log")
  lines=$(wc -l < "$log")
  printf '\n%s: %d bytes, %d lines; %s CPUs; load average %s\n' "$name" "$bytes" "$lines" \
    "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
  printf '                           wall (best of %d)   cpu user+sys (best of %d)\n' "$rounds" "$rounds"
  printf "grep -c '%s':%*s %6.3f s           %6.3f s   (%s matching lines)\n" "$pattern" \
    $((14 - ${#pattern})) "" "$t_grep" "$c_grep" "$grep_count"
  printf 'wc -l:                     %6.3f s           %6.3f s\n' "$t_wc" "$c_wc"
  printf 'efawatch analyze, 1 thread:%6.3f s           %6.3f s   (%.0f MB/s wall)\n' "$t_one" \
    "$c_one" "$(echo "$bytes / $t_one / 1000000" | bc -l)"
  printf 'efawatch analyze, threads %s:%6.3f s          %6.3f s\n' "${THREADS:-auto}" "$t_ew" "$c_ew"
  printf 'ratio to grep -c, 1 thread: wall %.2f, cpu %.2f; threads %s: wall %.2f, cpu %.2f\n' \
    "$(echo "$t_one / $t_grep" | bc -l)" "$(echo "$c_one / $c_grep" | bc -l)" "${THREADS:-auto}" \
    "$(echo "$t_ew / $t_grep" | bc -l)" "$(echo "$c_ew / $c_grep" | bc -l)"
  if [ -n "${BASELINE:-}" ]; then
    printf 'baseline, 1 thread:        %6.3f s           %6.3f s   (%s), ratio wall %.2f\n' \
      "$t_base" "$c_base" "$BASELINE" "$(echo "$t_base / $t_grep" | bc -l)"
  fi
  "$bin" analyze "$log" | head -1 || true
  summary+=("$(printf '%-16s 1 thread wall %.2fx cpu %.2fx; threads %s wall %.2fx' "$4" \
    "$(echo "$t_one / $t_grep" | bc -l)" "$(echo "$c_one / $c_grep" | bc -l)" "${THREADS:-auto}" \
    "$(echo "$t_ew / $t_grep" | bc -l)")")
}

if [[ $logs == *,nccl,* ]]; then
  bench_log "all-NCCL (targets: 1 thread <= 2.5x, default <= 2.0x)" "$tmp/nccl.log" 'NCCL INFO' \
    all-nccl
fi
if [[ $logs == *,chatty,* ]]; then
  # Each shape is written just before it is timed and removed after: the bench never holds all
  # of them (7 GB) at once, and no shape waits in a page cache that the machine may reclaim
  # meanwhile (a proactive reclaimer, such as DAMON's, pages out what went unread for a minute;
  # the shape timed tenth then read from pages read back, not written: grep and analyze both
  # slower, analyze by more).
  for shape in ${shapes//,/ }; do
    python3 "$here/gen_shapes.py" --nccl "$tmp/nccl.log" --out-dir "$tmp" --mb "$chatty_mb" \
      --shapes "$shape"
    bench_log "2%-NCCL $shape (target: 1 thread <= 2.0x)" "$tmp/$shape.log" 'NCCL' "$shape"
    rm -f "$tmp/$shape.log"
  done
fi
printf '\nratios to grep -c (targets: 2%%-NCCL shapes 1 thread <= 2.0x; all-nccl threads <= 2.0x)\n'
printf '%s\n' "${summary[@]}"
