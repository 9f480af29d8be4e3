#!/usr/bin/env bash
# Does the GPU cool down between sizes? netcheck fills the send buffer from the host and
# checks the result on the host, so at 1–4 GiB the GPUs sit idle for a while before each
# point's warm-up; nccl-tests fills and checks with GPU kernels. This runs three variants
# alternately at 256 MiB–4 GiB and samples SM/memory clocks and power every 100 ms:
#   default  — check on, 5 warm-up iterations (what `netcheck run` does)
#   nocheck  — check off (less idle time between points)
#   warm50   — check on, 50 warm-up iterations
# Usage (repository root): warmth.sh OUTDIR [ROUNDS]
set -u
out=${1:?outdir}; rounds=${2:-2}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
B=${NETCHECK:-./target/release/netcheck}
export NETCHECK_NCCL_LIBRARY=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
sed 's/^check = true/check = false/' bench-configs/default.toml > "$out/nocheck.toml"
step() { local name=$1; shift; echo "=== $name $(date -u +%T.%N | cut -c1-12): $*"; local t0=$(date +%s); "$@" > "$out/$name.txt" 2>&1; echo "exit=$? ($(( $(date +%s) - t0 )) s) end $(date -u +%T.%N | cut -c1-12)"; }
{ date -u; nvidia-smi -q -d PERFORMANCE,CLOCK | head -60; } > "$out/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv,noheader -lms 100 > "$out/clocks.csv" 2>&1 &
sampler=$!
common=(--min-bytes 256M --max-bytes 4G --step-factor 4)
for i in $(seq 1 "$rounds"); do
  step default-$i $B run "${common[@]}" --out "$out/default-$i"
  step nocheck-$i $B run --config "$out/nocheck.toml" "${common[@]}" --out "$out/nocheck-$i"
  step warm50-$i $B run "${common[@]}" --warmup 50 --out "$out/warm50-$i"
done
kill $sampler
