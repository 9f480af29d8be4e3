#!/usr/bin/env bash
# Ctrl-C during a sweep: exit 130, rows kept with status "interrupted", no worker left behind.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=${NETCHECK:-./target/release/netcheck}
out=${1:-/tmp/int}
$B run --min-bytes 1M --max-bytes 1G --iters 200 --out "$out" > "$out.stdout" 2> "$out.stderr" &
pid=$!; sleep 8
kill -INT $pid; t0=$(date +%s%N); wait $pid; rc=$?; t1=$(date +%s%N)
echo "SIGINT at 8 s: exit=$rc, $(( (t1 - t0) / 1000000 )) ms after the signal"
tail -3 "$out.stderr"
echo "rows kept: $(wc -l < "$out/results.jsonl"); $(grep -o '"status": "[a-z]*"' "$out/results.json")"
echo "workers left: $(pgrep -fc 'netcheck-device worker|netcheck worker' || true)"
