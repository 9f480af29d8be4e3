#!/usr/bin/env bash
# One process per GPU (netcheck's default, like training jobs) against all ranks as threads of
# one process (`--one-process`, like nccl-tests -g N), alternating, same NCCL, same call.
# Usage (repository root): one-process.sh OUTDIR [PAIRS]
set -u
out=${1:?outdir}; pairs=${2:-2}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
B=${NETCHECK:-./target/release/netcheck}
export NETCHECK_NCCL_LIBRARY=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
step() { local name=$1; shift; echo "=== $name: $*"; local t0=$(date +%s); "$@" > "$out/$name.txt" 2>&1; echo "exit=$? ($(( $(date +%s) - t0 )) s)"; }
date -u > "$out/env.txt"; nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv >> "$out/env.txt"
for i in $(seq 1 "$pairs"); do
  step procs-$i $B run --min-bytes 1K --max-bytes 4G --step-factor 4 --out "$out/procs-$i"
  step threads-$i $B run --one-process --min-bytes 1K --max-bytes 4G --step-factor 4 --out "$out/threads-$i"
done
for d in "$out"/procs-1 "$out"/threads-1; do echo "$d: $(grep -h -o 'via P2P/[A-Za-z ]*' "$d"/logs/*.log | sort | uniq -c | tr '\n' ' ')"; done
