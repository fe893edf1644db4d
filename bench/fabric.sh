#!/usr/bin/env bash
# Side-by-side fabric bench on one host, same provider (tcp, RDM) and sizes, in one run:
#   ping:      our median RTT  vs  fi_pingpong's usec/xfer x 2 (fi_pingpong prints half the RTT)
#   bandwidth: our 1 MiB unidirectional GB/s  vs  fi_pingpong's 1 MiB MB/sec and iperf3 (TCP)
# Targets: RTT <= 1.1x fi_pingpong, bandwidth >= 0.9x. Prints the ratios; exits 0 regardless
# (numbers on a shared CI box are information, not a gate).
# fi_pingpong's usec/xfer is a mean (loop time / iterations), so our mean is compared as well as
# our median. Each bandwidth figure is the median of REPS runs, since a busy small host swings
# them by several times from one run to the next.
# Usage: bench/fabric.sh [build-dir]   (needs fi_pingpong from libfabric-bin; iperf3 optional)
set -euo pipefail

BUILD=${1:-build}
TOOL=$(realpath "$BUILD/bin/efawatch-fabric-probe")
IFACE=${EFAWATCH_BENCH_IFACE:-lo}
ADDR=${EFAWATCH_BENCH_ADDR:-127.0.0.1}
ITERS=${EFAWATCH_BENCH_ITERS:-20000}
PING_SIZES=${EFAWATCH_BENCH_PING_SIZES:-"64 1024 4096"}
BW_SIZE=1048576
REPS=${EFAWATCH_BENCH_REPS:-3}
PORT=$((47592 + RANDOM % 1000))
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
command -v fi_pingpong >/dev/null || { echo "fi_pingpong not found (apt install libfabric-bin)"; exit 1; }

ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
median() { python3 -c "import statistics,sys; print(statistics.median(map(float, sys.argv[1:])))" "$@"; }

# fi_pingpong <size> <iterations> -> the data line of the client
pingpong() {
  fi_pingpong -e rdm -p tcp -d "$IFACE" -B "$PORT" -I "$2" -S "$1" >"$WORK/pp_server" 2>&1 &
  local srv=$!
  sleep 0.5
  fi_pingpong -e rdm -p tcp -d "$IFACE" -P "$PORT" -I "$2" -S "$1" "$ADDR" 2>&1 | tail -1
  wait "$srv" || true
}

"$TOOL" --provider tcp --interface "$IFACE" responder --address-file "$WORK/addr" \
  >"$WORK/responder.json" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [[ -s $WORK/addr ]] && break; sleep 0.1; done
PEER=$(cat "$WORK/addr")
echo "provider: $(python3 -c "import json,sys; f=json.load(open(sys.argv[1]))['fabric']; print(f['provider'], f['fabric'], f['domain'])" "$WORK/responder.json")"
echo "host: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '%-8s %12s %12s %14s %10s %10s\n' size "ours p50" "ours mean" "fi_pingpong" "p50 ratio" \
  "mean ratio"
for size in $PING_SIZES; do
  read -r p50 mean < <("$TOOL" --provider tcp --interface "$IFACE" ping --peer "$PEER" \
      --count "$ITERS" --warmup 100 --size "$size" |
    python3 -c "import json,sys; r=json.load(sys.stdin)['rtt_us']; print(r['median'], r['mean'])")
  half=$(pingpong "$size" "$ITERS" | awk '{print $7}')
  theirs=$(python3 -c "print(2 * $half)")
  printf '%-8s %9.1f us %9.1f us %11.1f us %10s %10s\n' "$size" "$p50" "$mean" "$theirs" \
    "$(ratio "$p50" "$theirs")" "$(ratio "$mean" "$theirs")"
done

echo
runs=()
for _ in $(seq "$REPS"); do
  runs+=("$("$TOOL" --provider tcp --interface "$IFACE" bandwidth --peer "$PEER" \
    --sizes "$BW_SIZE" --ms-per-size 2000 |
    python3 -c "import json,sys; print(json.load(sys.stdin)['points'][0]['gbytes_per_second'] * 1000)")")
done
ours_bw=$(median "${runs[@]}")
runs=()
for _ in $(seq "$REPS"); do runs+=("$(pingpong "$BW_SIZE" 2000 | awk '{print $6}')"); done
pp_bw=$(median "${runs[@]}")
echo "bandwidth at 1 MiB, median of $REPS runs each:"
printf '%-34s %10.1f MB/s\n' "ours (1 MiB, window, one way)" "$ours_bw"
printf '%-34s %10.1f MB/s   ratio %s\n' "fi_pingpong (1 MiB, ping-pong)" "$pp_bw" "$(ratio "$ours_bw" "$pp_bw")"
if command -v iperf3 >/dev/null; then
  runs=()
  for _ in $(seq "$REPS"); do
    iperf3 -s -1 -B "$ADDR" -p "$PORT" >/dev/null 2>&1 &
    sleep 0.5
    runs+=("$(iperf3 -c "$ADDR" -p "$PORT" -l "$BW_SIZE" -t 2 -J |
      python3 -c "import json,sys; print(json.load(sys.stdin)['end']['sum_received']['bits_per_second'] / 8e6)")")
    wait $! 2>/dev/null || true
  done
  ip_bw=$(median "${runs[@]}")
  printf '%-34s %10.1f MB/s   ratio %s\n' "iperf3 (TCP, 1 MiB writes, 1 stream)" "$ip_bw" "$(ratio "$ours_bw" "$ip_bw")"
else
  echo "iperf3 not installed: skipped"
fi
