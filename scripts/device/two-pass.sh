#!/usr/bin/env bash
# Hang safety and Ctrl-C with the two-pass order (every point timed, then every point
# verified): a signal to one worker, or SIGINT to netcheck, once in each pass. The pass is
# told from results.jsonl: a 1M-1G sweep (factor 2) has 44 points, so line 45 on is the
# verification pass re-appending rows. Each case must exit within --timeout (124, naming
# rank 1) or at once (130), keep every timed row, and leave `wrong: null` on the points it
# did not verify. Usage (repository root): two-pass.sh OUTDIR
set -u
out=${1:?outdir}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
B=${NETCHECK:-./target/release/netcheck}
export NETCHECK_NCCL_LIBRARY=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
points=44
lines() { [ -f "$1/results.jsonl" ] && wc -l < "$1/results.jsonl" || echo 0; }
case_run() { # name signal target(worker|netcheck) after-lines
  local name=$1 sig=$2 target=$3 after=$4 dir="$out/$1"
  $B run --min-bytes 1M --max-bytes 1G --iters 200 --timeout 30s --out "$dir" > "$dir.stdout" 2> "$dir.stderr" &
  local pid=$! t0=$(date +%s%N)
  until [ "$(lines "$dir")" -ge "$after" ] || ! kill -0 $pid 2>/dev/null; do sleep 0.1; done
  local victim=$pid
  [ "$target" = worker ] && victim=$(pgrep -f "worker --rank 1 " | head -1)
  local ts=$(date +%s%N); kill -$sig "$victim"
  wait $pid; local rc=$?; local te=$(date +%s%N)
  [ "$sig" = STOP ] && kill -KILL "$victim" 2>/dev/null
  echo "=== $name: SIG$sig to $target at line $(lines "$dir") ($(( (ts - t0) / 1000000 )) ms in): exit=$rc $(( (te - ts) / 1000000 )) ms after the signal"
  grep -v '^\[rank' "$dir.stderr" | grep -iE "rank|phase|interrupt|timeout|error" | tail -4
  python3 - "$dir/results.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
print(f"status {d['status']}; rows {len(rows)}; verified {sum(r['wrong'] is not None for r in rows)}; wrong {sum(r['wrong'] or 0 for r in rows)}")
PY
  echo "workers left: $(pgrep -fc 'worker --rank' || true)"
}
date -u > "$out/env.txt"
case_run kill-timing KILL worker 10
case_run kill-check KILL worker $((points + 3))
case_run stop-check STOP worker $((points + 3))
case_run int-timing INT netcheck 10
case_run int-check INT netcheck $((points + 3))
