#!/usr/bin/env bash
# Benchmark: two or more builds of `netcheck analyze` on the same log, runs alternating
# between them so that load from other processes hits each alike; the median and the best
# wall and CPU time per build. For steps of a few percent, which the best-of-5 of
# bench-analyze.sh cannot tell from the host's noise.
#
# Usage: scripts/bench-analyze-ab.sh LOG RUNS BIN...
#   e.g. scripts/bench-analyze-ab.sh /tmp/bench/bench-nccl-256m-mix0.log 10 /tmp/old /tmp/new
#   (KEEP=1 scripts/bench-analyze.sh writes such a log and keeps it.)
#
# Wall time from the shell's clock (1 ms), CPU time (user + sys, 10 ms steps) and peak RSS
# from GNU time; the analysis goes to a file, as in bench-analyze.sh.
set -euo pipefail
export LC_ALL=C

if (($# < 3)); then
  sed -n '2,12p' "$0" >&2
  exit 2
fi
log=$1 runs=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

cat "$log" > /dev/null   # warm the page cache
for _ in $(seq "$runs"); do
  for bin in "$@"; do
    start=$EPOCHREALTIME
    # The analyzer exits 1 on a failing verdict; that is not a benchmark error.
    /usr/bin/time -f '%U %S %M' -o "$dir/time" "$bin" analyze --format json "$log" > "$dir/out" || true
    end=$EPOCHREALTIME
    tail -1 "$dir/time" | awk -v b="$bin" -v s="$start" -v e="$end" '{printf "%s %.3f %.2f %d\n", b, e - s, $1 + $2, $3}'
  done
done > "$dir/runs"

echo "date:    $(date -u +%Y-%m-%dT%H:%MZ)"
pressure=$(awk '/^some/ {sub("avg10=", "", $2); print ", CPU pressure " $2 "%"}' /proc/pressure/cpu 2>/dev/null || true)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)$pressure"
echo "input:   $log ($(($(stat -c %s "$log") / 1048576)) MiB), $runs alternating runs per build"
for bin in "$@"; do
  awk -v b="$bin" '$1 == b' "$dir/runs" | sort -n -k2 | awk '{w[NR] = $2} END {printf "%s: wall median %.3f s, best %.3f s", $1, w[int((NR + 1) / 2)], w[1]}'
  awk -v b="$bin" '$1 == b' "$dir/runs" | sort -n -k3 | awk '{c[NR] = $3; if ($4 > r) r = $4} END {printf "; CPU median %.2f s, best %.2f s; peak RSS %d KiB\n", c[int((NR + 1) / 2)], c[1], r}'
done
