#!/usr/bin/env bash
# Does the way an in-place point's input reaches the output buffer change its timed loop?
# (issue 3: reduce_scatter 1G in-place was the one point below 0.99x the reference.)
# Alternates, at 256 MiB-1 GiB:
#   default - netcheck as released: the pattern is uploaded (host to device) into the output
#             buffer right before the warm-up
#   d2d     - scratch build, NETCHECK_SCRATCH_INPLACE=d2d: uploaded to the input buffer, then
#             copied device to device into the output buffer
#   skip    - scratch build, NETCHECK_SCRATCH_INPLACE=skip: no write at all before timing
# The scratch build is main plus the switch in Point::prepare_inputs (docs/benchmarks.md says
# how it was made); it is not part of the repository.
# Usage (repository root): inplace.sh OUTDIR [ROUNDS]
set -u
out=${1:?outdir}; rounds=${2:-6}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
B=${NETCHECK:-./target/release/netcheck}
S=${NETCHECK_SCRATCH:?path of the scratch build}
export NETCHECK_NCCL_LIBRARY=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
step() { local name=$1; shift; echo "=== $name $(date -u +%T): $*"; local t0=$(date +%s); "$@" > "$out/$name.txt" 2>&1; echo "exit=$? ($(( $(date +%s) - t0 )) s)"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; } > "$out/env.txt" 2>&1
common=(--min-bytes 256M --max-bytes 1G --step-factor 4)
t_start=$(date +%s)
for i in $(seq 1 "$rounds"); do
  [ $(( $(date +%s) - t_start )) -gt "${BUDGET_S:-420}" ] && { echo "budget reached after $((i - 1)) rounds"; break; }
  step default-$i $B run "${common[@]}" --out "$out/default-$i"
  NETCHECK_SCRATCH_INPLACE=d2d step d2d-$i $S run "${common[@]}" --out "$out/d2d-$i"
  NETCHECK_SCRATCH_INPLACE=skip step skip-$i $S run "${common[@]}" --out "$out/skip-$i"
  if [ "$i" = 1 ]; then MAX_BYTES=$((1 << 30)) step torch python3 .peer/torch_coll_bench.py "$out/torch.json"; fi
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$out/env.txt" 2>&1
