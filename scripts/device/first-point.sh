#!/usr/bin/env bash
# The first point of the second collective in a sweep (reduce_scatter 1K out-of-place after
# all_gather) has a timed-loop mean 3-5 us above the p50 of the sampled loop that follows it.
# Which switch causes it? Alternates, check off (timing only):
#   small   - 1K-64K, so every host pattern is small (is it the 2-4 GiB pattern build?)
#   default - 1K-4G x4
#   rsfirst - 1K-4G x4 with --ops reduce_scatter,all_gather (is it the op, or being second?)
#   fw2000  - scratch build, NETCHECK_SCRATCH_FIRST_WARMUP=2000 instead of 50 extra warm-up
#             iterations for the first point of each collective
# Usage (repository root): first-point.sh OUTDIR [ROUNDS]
set -u
out=${1:?outdir}; rounds=${2:-4}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
B=${NETCHECK:-./target/release/netcheck}
S=${NETCHECK_SCRATCH:?path of the scratch build}
export NETCHECK_NCCL_LIBRARY=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
step() { local name=$1; shift; echo "=== $name $(date -u +%T): $*"; local t0=$(date +%s); "$@" > "$out/$name.txt" 2>&1; echo "exit=$? ($(( $(date +%s) - t0 )) s)"; }
date -u > "$out/env.txt"
sed 's/^check = true/check = false/' bench-configs/default.toml > "$out/nocheck.toml"
c=(--config "$out/nocheck.toml" --step-factor 4 --min-bytes 1K)
t_start=$(date +%s)
for i in $(seq 1 "$rounds"); do
  [ $(( $(date +%s) - t_start )) -gt "${BUDGET_S:-300}" ] && { echo "budget reached after $((i - 1)) rounds"; break; }
  step small-$i $B run "${c[@]}" --max-bytes 64K --out "$out/small-$i"
  step default-$i $B run "${c[@]}" --max-bytes 4G --out "$out/default-$i"
  step rsfirst-$i $B run "${c[@]}" --max-bytes 4G --ops reduce_scatter,all_gather --out "$out/rsfirst-$i"
  NETCHECK_SCRATCH_FIRST_WARMUP=2000 step fw2000-$i $S run "${c[@]}" --max-bytes 4G --out "$out/fw2000-$i"
done
