#!/usr/bin/env bash
# Small-message timing check: a short all-gather / reduce-scatter sweep with many iterations.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=${NETCHECK:-./target/release/netcheck}
wheel=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
NETCHECK_NCCL_LIBRARY=$wheel $B run --min-bytes 1K --max-bytes 64M --step-factor 4 --iters 50 --warmup 10 --out ${1:-/tmp}/lat 2>&1 | grep -v "^\[rank"
