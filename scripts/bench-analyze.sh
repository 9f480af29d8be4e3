#!/usr/bin/env bash
# Benchmark: `netcheck analyze` (release build) against `grep -c NCCL` over the same generated
# log, in the same run. Target: analyze takes at most 2× grep's time.
#
# Usage: scripts/bench-analyze.sh [SIZE_MIB] [RUNS]     (defaults: 256 MiB, 3 runs; best run counts)
#   MIX=N interleaves N lines of training output (tests/fixtures/logs/grammar/no-nccl.log) after
#   every NCCL log line, like `kubectl logs` of a training job; default 0 (NCCL lines only,
#   the hardest case: nearly every line is an event).
#
# The log is generated from the fixture lines under tests/fixtures/logs (real H200 captures
# and hand-written grammar logs), each block rewritten to another host and pid, so the
# analyzer tracks thousands of processes on ~100 hosts. It is written to $BENCH_DIR (default
# a temporary folder) and removed afterwards unless KEEP=1.
set -euo pipefail

size_mib=${1:-256}
runs=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$dir"
log=$dir/bench-nccl.log
bin=$root/target/release/netcheck

cleanup() { [[ ${KEEP:-0} == 1 ]] || rm -f "$log" "$dir/out.txt"; }
trap cleanup EXIT

echo "building release binary..." >&2
(cd "$root" && cargo build --release --quiet)

echo "generating ${size_mib} MiB log in $log..." >&2
python3 - "$root" "$log" "$size_mib" "${MIX:-0}" <<'PY'
import glob, os, re, sys
root, out_path, size_mib, mix = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
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
        chunk = "\n".join(prefix.sub(lambda m: f"{host}:{pid}:{pid + int(m.group(3)) % 50} [", l) for l in lines) + "\n"
        out.write(chunk)
        written += len(chunk)
        block += 1
print(f"{written / 2**20:.0f} MiB, {block} blocks of {len(lines)} lines", file=sys.stderr)
PY

lines=$(wc -l < "$log")
bytes=$(stat -c %s "$log")
cat "$log" > /dev/null   # warm the page cache for both tools

# best-of-N wall time (s) and peak RSS (KiB) of a command
measure() {
  local best= rss=
  for _ in $(seq "$runs"); do
    local out
    # Output to a real file: GNU grep stops at the first match when stdout is /dev/null.
    # The analyzer exits 1 on a failing verdict; that is not a benchmark error.
    out=$( { /usr/bin/time -f '%e %M' "$@" > "$dir/out.txt" || true; } 2>&1 | tail -1)
    local t=${out% *} m=${out#* }
    if [[ -z $best ]] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
    if [[ -z $rss ]] || (( m > rss )); then rss=$m; fi
  done
  echo "$best $rss"
}

read -r grep_s grep_kib < <(measure grep -c NCCL "$log")
read -r nc_s nc_kib < <(measure "$bin" analyze --format json "$log")
ratio=$(awk "BEGIN{printf \"%.2f\", $nc_s / $grep_s}")
mibs=$(awk "BEGIN{printf \"%.0f\", $bytes / 1048576 / $nc_s}")

echo "date:     $(date -u +%Y-%m-%dT%H:%MZ)"
echo "machine:  $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "input:    $((bytes / 1048576)) MiB, $lines lines"
echo "grep -c NCCL:             ${grep_s}s  (peak RSS ${grep_kib} KiB)"
echo "netcheck analyze (json):  ${nc_s}s  (peak RSS ${nc_kib} KiB, ${mibs} MiB/s)"
echo "ratio analyze/grep:       ${ratio}x  (target <= 2x)"
"$bin" analyze --format json "$log" | python3 -c 'import json,sys; a=json.load(sys.stdin); print("analysis: transport", a["inter_node_transport"], "ranks tracked", len(a["per_rank"]), "findings", [f["id"] for f in a["findings"]])'
