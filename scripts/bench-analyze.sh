#!/usr/bin/env bash
# Benchmark: `netcheck analyze` (release build) against grep over the same generated log, in
# the same run. Two greps: `grep -c -E "via NET/|Using network"` (what a person greps for to
# answer the same question; issue 25's target: analyze at most 1.0x its wall time and 1.5x its
# CPU time on MIX=0) and `grep -c NCCL` (the earlier reference, kept for comparison).
#
# Usage: scripts/bench-analyze.sh [SIZE_MIB] [RUNS]     (defaults: 256 MiB, 3 runs; best run counts)
#   MIX=N interleaves N lines of training output (tests/fixtures/logs/grammar/no-nccl.log) after
#   every NCCL log line, like `kubectl logs` of a training job; default 0 (NCCL lines only,
#   the hardest case: nearly every line is an event).
#   FORM=ray wraps every line as Ray prints a worker's output (a coloured
#   `(RayTrainWorker pid=PID, ip=...)` tag first); FORM=json makes every line a Docker
#   json-file record, as log shippers keep them. Default: plain lines.
#   ONE_CORE=1 pins both tools to one CPU core (taskset): analyze reads and frames on a
#   second thread, so this shows what it costs without that second core.
#   NETCHECK_BIN=path benchmarks that binary instead of building target/release/netcheck
#   (e.g. an older build, for before/after numbers).
#   GENERATE_ONLY=1 (with KEEP=1) writes the log and stops: scripts/build-pgo.sh trains on it.
#   FLOOR=1 also times benches/analyze_floor.rs: per line only what any analyzer must do
#   (split lines, find the marker, look up the prefix and the message in hash tables), so
#   the run shows how much of analyze's time is the analysis proper.
#
# The log is generated from the fixture lines under tests/fixtures/logs (real H200 captures
# and hand-written grammar logs), each block rewritten to another host and pid, so the
# analyzer tracks thousands of processes on ~100 hosts. It is written to $BENCH_DIR (default
# a temporary folder) and removed afterwards unless KEEP=1; an existing log of the same size
# and mix is reused when KEEP=1.
#
# Runs alternate between the two tools, so load from other processes hits both alike. Wall
# time is from the shell's clock (1 ms resolution); CPU time (user + sys, 10 ms resolution)
# and peak RSS from GNU time.
set -euo pipefail
export LC_ALL=C   # a decimal point in $EPOCHREALTIME and awk

size_mib=${1:-256}
runs=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$dir"
form=${FORM:-plain}
case $form in plain | ray | json) ;; *) echo "FORM must be plain, ray or json" >&2; exit 2 ;; esac
log=$dir/bench-nccl-${size_mib}m-mix${MIX:-0}.log
[[ $form == plain ]] || log=${log%.log}-$form.log
bin=${NETCHECK_BIN:-$root/target/release/netcheck}

cleanup() {
  rm -f "$dir/out.txt" "$dir/time.txt"
  [[ ${KEEP:-0} == 1 ]] || rm -f "$log"
}
trap cleanup EXIT

if [[ -z ${NETCHECK_BIN:-} && ${GENERATE_ONLY:-0} != 1 ]]; then
  echo "building release binary..." >&2
  (cd "$root" && cargo build --release --quiet)
fi
floor=
if [[ ${FLOOR:-0} == 1 ]]; then
  echo "building the floor bench..." >&2
  floor=$(cd "$root" && cargo bench --no-run --bench analyze_floor 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p')
  [[ -x $root/$floor ]] || { echo "could not build benches/analyze_floor.rs" >&2; exit 1; }
  floor=$root/$floor
fi

generate() {
python3 - "$root" "$log" "$size_mib" "${MIX:-0}" "$form" <<'PY'
import glob, json, os, re, sys
root, out_path, size_mib, mix, form = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
files = sorted(glob.glob(f"{root}/tests/fixtures/logs/h200/*.log")) + sorted(glob.glob(f"{root}/tests/fixtures/logs/grammar/*.log"))
lines = []
for f in files:
    with open(f, encoding="utf-8", errors="replace") as fh:
        lines += [l.rstrip("\r\n") for l in fh if not l.startswith("# ")]
with open(f"{root}/tests/fixtures/logs/grammar/no-nccl.log", encoding="utf-8") as fh:
    training = [l.rstrip("\n") for l in fh if not l.startswith("# ")]
if mix:
    lines = [x for l in lines for x in [l] + [training[i % len(training)] for i in range(mix)]]
prefix = re.compile(r"([A-Za-z0-9._-]+):(\d+):(\d+) \[")
target = size_mib * 1024 * 1024
written = block = 0
with open(out_path, "w", encoding="utf-8") as out:
    while written < target:
        host, pid = f"node-{block % 97:03d}", 10000 + block
        block_lines = [prefix.sub(lambda m: f"{host}:{pid}:{pid + int(m.group(3)) % 50} [", l) for l in lines]
        if form == "ray":
            tag = f"\x1b[36m(RayTrainWorker pid={pid}, ip=10.0.{block % 97}.7)\x1b[0m "
            block_lines = [tag + l for l in block_lines]
        elif form == "json":
            block_lines = [json.dumps({"log": l + "\n", "stream": "stderr", "time": "2026-12-06T10:00:00.000000000Z"}) for l in block_lines]
        chunk = "\n".join(block_lines) + "\n"
        out.write(chunk)
        written += len(chunk)
        block += 1
print(f"{written / 2**20:.0f} MiB, {block} blocks of {len(lines)} lines", file=sys.stderr)
PY
}

if [[ ${KEEP:-0} == 1 && -s $log ]]; then
  echo "reusing $log" >&2
else
  echo "generating ${size_mib} MiB log in $log..." >&2
  generate
fi
[[ ${GENERATE_ONLY:-0} == 1 ]] && exit 0

lines=$(wc -l < "$log")
bytes=$(stat -c %s "$log")
cat "$log" > /dev/null   # warm the page cache for both tools

pin=()
[[ ${ONE_CORE:-0} == 1 ]] && pin=(taskset -c 0)

# One timed run of a command: prints "wall_s cpu_s peak_rss_kib".
run_once() {
  local start end
  start=$EPOCHREALTIME
  # Output to a real file: GNU grep stops at the first match when stdout is /dev/null.
  # The analyzer exits 1 on a failing verdict; that is not a benchmark error.
  /usr/bin/time -f '%U %S %M' -o "$dir/time.txt" "${pin[@]}" "$@" > "$dir/out.txt" || true
  end=$EPOCHREALTIME
  # GNU time puts "Command exited with non-zero status 1" first: the numbers are last.
  tail -1 "$dir/time.txt" | awk -v s="$start" -v e="$end" '{printf "%.3f %.2f %d\n", e - s, $1 + $2, $3}'
}

# Best (lowest) wall and CPU time and highest peak RSS over the runs, per tool.
declare -A wall cpu rss
keep() { # tool wall cpu rss
  if [[ -z ${wall[$1]:-} ]] || awk "BEGIN{exit !($2 < ${wall[$1]})}"; then wall[$1]=$2; fi
  if [[ -z ${cpu[$1]:-} ]] || awk "BEGIN{exit !($3 < ${cpu[$1]})}"; then cpu[$1]=$3; fi
  if [[ -z ${rss[$1]:-} ]] || (( $4 > ${rss[$1]} )); then rss[$1]=$4; fi
}
for _ in $(seq "$runs"); do
  keep grepE $(run_once grep -c -E "via NET/|Using network" "$log")
  keep analyze $(run_once "$bin" analyze --format json "$log")
  keep grep $(run_once grep -c NCCL "$log")
  [[ -z $floor ]] || keep floor $(run_once "$floor" "$log")
done

ratio=$(awk "BEGIN{printf \"%.2f\", ${wall[analyze]} / ${wall[grep]}}")
cpu_ratio=$(awk "BEGIN{printf \"%.2f\", ${cpu[analyze]} / (${cpu[grep]} > 0 ? ${cpu[grep]} : 0.01)}")
ratioE=$(awk "BEGIN{printf \"%.2f\", ${wall[analyze]} / ${wall[grepE]}}")
cpu_ratioE=$(awk "BEGIN{printf \"%.2f\", ${cpu[analyze]} / (${cpu[grepE]} > 0 ? ${cpu[grepE]} : 0.01)}")
mibs=$(awk "BEGIN{printf \"%.0f\", $bytes / 1048576 / ${wall[analyze]}}")

echo "date:     $(date -u +%Y-%m-%dT%H:%MZ)"
pressure=$(awk '/^some/ {sub("avg10=", "", $2); print ", CPU pressure " $2 "%"}' /proc/pressure/cpu 2>/dev/null || true)
echo "machine:  $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)$pressure"
echo "binary:   $bin"
echo "input:    $((bytes / 1048576)) MiB, $lines lines, MIX=${MIX:-0}, FORM=$form, best of $runs${pin:+, pinned to one core}"
echo "grep -c -E 'via NET/|Using network': ${wall[grepE]}s wall, ${cpu[grepE]}s CPU  (peak RSS ${rss[grepE]} KiB)"
echo "grep -c NCCL:             ${wall[grep]}s wall, ${cpu[grep]}s CPU  (peak RSS ${rss[grep]} KiB)"
echo "netcheck analyze (json):  ${wall[analyze]}s wall, ${cpu[analyze]}s CPU  (peak RSS ${rss[analyze]} KiB, ${mibs} MiB/s)"
if [[ -n $floor ]]; then
  echo "floor (benches/analyze_floor.rs): ${wall[floor]}s wall, ${cpu[floor]}s CPU  (peak RSS ${rss[floor]} KiB)"
fi
echo "ratio analyze/grep -E:    ${ratioE}x wall  (target <= 1.0x), ${cpu_ratioE}x CPU  (target <= 1.5x)"
echo "ratio analyze/grep NCCL:  ${ratio}x wall, ${cpu_ratio}x CPU"
"$bin" analyze --format json "$log" | python3 -c 'import json,sys; a=json.load(sys.stdin); print("analysis: transport", a["inter_node_transport"], "ranks tracked", len(a["per_rank"]), "findings", [f["id"] for f in a["findings"]])'
