#!/usr/bin/env bash
# Multi-GPU-per-node layouts on one host (issue 7, docs/benchmarks.md): 2 simulated nodes
# splitting the host's GPUs beside the torch peer with fake hosts; on a host with fewer than 4
# GPUs also 2 nodes × all GPUs sharing them, so NCCL mixes intra-node P2P with inter-node
# NET/Socket anyway; the layout check, per-rank links, and a grep cross-check of the logs.
# Usage (repository root): layout.sh OUTDIR
set -u
out=${1:?outdir}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
B=${NETCHECK:-./target/release/netcheck}
wheel=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
export NETCHECK_NCCL_LIBRARY=$wheel
gpus=$(nvidia-smi -L | wc -l)
step() { local name=$1; shift; echo "=== $name: $*"; local t0=$(date +%s); "$@" > "$out/$name.txt" 2>&1; echo "exit=$? ($(( $(date +%s) - t0 )) s)"; }

# 1. 2 simulated nodes splitting the host's GPUs (2 GPUs: 2 × 1; 8 GPUs: 2 × 4, where NCCL
#    mixes NVLink P2P inside each node with NET/Socket between them), and the torch peer with
#    one fake host per rank.
step sim-2 $B run --simulate-nodes 2 --min-bytes 1K --max-bytes 256M --step-factor 4 --out "$out/sim-2"
FAKE_HOSTS=1 MAX_BYTES=$((1 << 28)) step torch-fakehosts python3 .peer/torch_coll_bench.py "$out/torch-fakehosts.json"
# 2. A host with fewer than 4 GPUs builds the mixed layout by sharing GPUs: 2 nodes × all GPUs.
mixed=sim-2
if [ "$gpus" -lt 4 ]; then
  mixed=sim-2x$gpus
  step $mixed $B run --simulate-nodes 2 --gpus-per-node "$gpus" --min-bytes 1K --max-bytes 64M --step-factor 4 --expect socket --out "$out/$mixed"
fi
# 3. The mixed layout with --expect efa: must fail (exit 1).
step $mixed-efa $B run --simulate-nodes 2 $([ "$gpus" -lt 4 ] && echo --gpus-per-node "$gpus") --min-bytes 1M --max-bytes 1M --expect efa --out "$out/$mixed-efa"
# Cross-check of the analysis: connection lines per rank log and transport, counted by grep.
for f in "$out/$mixed"/logs/rank-*.log; do
  echo "$(basename "$f"): $(grep -c ' via P2P' "$f") P2P lines, $(grep -c ' via NET/Socket' "$f") NET/Socket lines; $(grep -m1 -o 'rank [0-9]* nRanks [0-9]* nNodes [0-9]* localRanks [0-9]* localRank [0-9]*' "$f")"
done > "$out/grep-crosscheck.txt"
$B analyze --format json "$out/$mixed"/logs/*.log > "$out/$mixed-analysis.json"
$B analyze "$out/$mixed"/logs/*.log > "$out/$mixed-analysis.txt" 2>&1
grep -h "netcheck:" "$out"/sim-*.txt | head -40
cat "$out/grep-crosscheck.txt"
