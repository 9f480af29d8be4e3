#!/usr/bin/env bash
# Multi-GPU-per-node layouts on one host (issue 7, on the GPUs this host has): simulated nodes
# with one rank each beside the torch peer with fake hosts, then nodes of several ranks that
# share the host's GPUs, where NCCL mixes intra-node P2P with inter-node NET/Socket.
# Usage (repository root): layout.sh OUTDIR
set -u
out=${1:?outdir}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
B=${NETCHECK:-./target/release/netcheck}
wheel=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
export NETCHECK_NCCL_LIBRARY=$wheel
gpus=$(nvidia-smi -L | wc -l)
step() { local name=$1; shift; echo "=== $name: $*"; local t0=$(date +%s); "$@" > "$out/$name.txt" 2>&1; echo "exit=$? ($(( $(date +%s) - t0 )) s)"; }

# 1. N simulated nodes of one GPU each, and the torch peer with one fake host per rank.
step sim-1pernode $B run --simulate-nodes "$gpus" --min-bytes 1K --max-bytes 256M --step-factor 4 --out "$out/sim-1pernode"
FAKE_HOSTS=1 MAX_BYTES=$((1 << 28)) step torch-fakehosts python3 .peer/torch_coll_bench.py "$out/torch-fakehosts.json"
# 2. 2 simulated nodes × all GPUs: each node's ranks talk P2P, the nodes talk NET/Socket.
step sim-2x$gpus $B run --simulate-nodes 2 --gpus-per-node "$gpus" --min-bytes 1K --max-bytes 64M --step-factor 4 --expect socket --out "$out/sim-2x$gpus"
# 3. The same with --expect efa: must fail (exit 1).
step sim-2x$gpus-efa $B run --simulate-nodes 2 --gpus-per-node "$gpus" --min-bytes 1M --max-bytes 1M --expect efa --out "$out/sim-2x$gpus-efa"
# Cross-check of the analysis: connection lines per rank log and transport, counted by grep.
for f in "$out/sim-2x$gpus"/logs/rank-*.log; do
  echo "$(basename "$f"): $(grep -c ' via P2P' "$f") P2P lines, $(grep -c ' via NET/Socket' "$f") NET/Socket lines; $(grep -m1 -o 'rank [0-9]* nRanks [0-9]* nNodes [0-9]* localRanks [0-9]* localRank [0-9]*' "$f")"
done > "$out/grep-crosscheck.txt"
$B analyze --format json "$out/sim-2x$gpus"/logs/*.log > "$out/sim-2x$gpus-analysis.json"
$B analyze "$out/sim-2x$gpus"/logs/*.log > "$out/sim-2x$gpus-analysis.txt" 2>&1
grep -h "netcheck:" "$out"/sim-*.txt | head -40
cat "$out/grep-crosscheck.txt"
