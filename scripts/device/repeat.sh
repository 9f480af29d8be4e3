#!/usr/bin/env bash
# Run-to-run spread (issue 3): netcheck three times over 1 KiB–4 GiB with the torch wheel's
# NCCL, the torch peer once in between, all in one call. Compare each run with the nccl-tests
# reference afterwards (`netcheck ingest` + `netcheck gate --baseline`, docs/benchmarks.md).
# Usage (repository root): repeat.sh OUTDIR [RUNS]
set -u
out=${1:?outdir}; runs=${2:-3}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
B=${NETCHECK:-./target/release/netcheck}
wheel=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
step() { local name=$1; shift; echo "=== $name: $*"; local t0=$(date +%s); "$@" > "$out/$name.txt" 2>&1; echo "exit=$? ($(( $(date +%s) - t0 )) s)"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.nccl.version())'; } > "$out/env.txt" 2>&1
for i in $(seq 1 "$runs"); do
  NETCHECK_NCCL_LIBRARY=$wheel step run-$i $B run --min-bytes 1K --max-bytes 4G --step-factor 4 --out "$out/run-$i"
  if [ "$i" = 1 ]; then MAX_BYTES=$((1 << 32)) step torch python3 .peer/torch_coll_bench.py "$out/torch.json"; fi
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> "$out/env.txt" 2>&1
