#!/usr/bin/env bash
# Quick engine check on the GPU host: a short sweep through every path (default library,
# simulate-nodes, dtypes, all_reduce), before the full benchmark. Usage: smoke.sh OUTDIR
set -u
out=${1:?outdir}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=${NETCHECK:-./target/release/netcheck}
wheel=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
step() { echo "=== $*"; "$@"; echo "exit=$?"; }
step $B run --min-bytes 1K --max-bytes 16M --step-factor 4 --iters 5 --warmup 2 --out "$out/default"
NETCHECK_NCCL_LIBRARY=$wheel step $B run --ops all_gather,reduce_scatter,all_reduce --min-bytes 1K --max-bytes 1M --step-factor 8 --iters 5 --warmup 2 --dtype float32,bfloat16,float16,int8,uint8,int32,float64 --out "$out/dtypes"
NETCHECK_NCCL_LIBRARY=$wheel step $B run --simulate-nodes 2 --min-bytes 1M --max-bytes 16M --step-factor 4 --iters 5 --warmup 2 --expect efa --out "$out/simnodes"
ls -R "$out" | head -40
