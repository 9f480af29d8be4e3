#!/usr/bin/env bash
# Hang safety on the GPU host: kill one worker mid-sweep (SIGKILL), and freeze one (SIGSTOP).
# `netcheck run` must end within --timeout, name the rank, keep the rows measured so far, and
# exit 124. Usage: hang.sh OUTDIR
set -u
out=${1:?outdir}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=${NETCHECK:-./target/release/netcheck}
for sig in KILL STOP; do
  echo "=== kill -$sig rank 1 mid-sweep (--timeout 30s)"
  start=$(date +%s%N)
  $B run --min-bytes 1M --max-bytes 1G --iters 200 --timeout 30s --out "$out/hang-$sig" > "$out/hang-$sig.stdout" 2> "$out/hang-$sig.stderr" &
  pid=$!
  sleep 8
  victim=$(pgrep -f "netcheck worker --rank 1 " | head -1)
  echo "victim pid=$victim"; kill -$sig "$victim"
  wait $pid; rc=$?
  end=$(date +%s%N)
  echo "exit=$rc after $(( (end - start) / 1000000 )) ms (signal sent at 8 s)"
  [ "$sig" = STOP ] && kill -KILL "$victim" 2>/dev/null
  tail -5 "$out/hang-$sig.stderr"
  echo "rows kept: $(wc -l < "$out/hang-$sig/results.jsonl") ; status: $(grep -o '"status": "[a-z]*"' "$out/hang-$sig/results.json")"
done
