#!/usr/bin/env bash
# Does the correctness check slow the timed loops that follow it? Three variants, alternating,
# at 256 MiB–4 GiB, with SM/memory clocks and power sampled every 100 ms (clocks.csv):
#   default  — what `netcheck run` does (since e20401b: every point timed, then verified)
#   nocheck  — `check = false`: no verification at all
#   warm50   — default with 50 warm-up iterations
# Before e20401b each point was verified right after its timed loop, and "default" ran 2–6%
# below "nocheck" at 1–4 GiB (docs/benchmarks.md, "Timing before verification"). Now the two
# should agree within run-to-run noise.
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
