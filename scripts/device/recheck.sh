#!/usr/bin/env bash
# Re-check after the launcher's failure-grace fix: a frozen rank (SIGSTOP) must end the run
# within --timeout; plus a third large-size sweep for the run-to-run spread. Usage: recheck.sh OUT
set -u
out=${1:?outdir}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=${NETCHECK:-./target/release/netcheck}
export NETCHECK_NCCL_LIBRARY=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
start=$(date +%s%N)
$B run --min-bytes 1M --max-bytes 1G --iters 200 --timeout 30s --out "$out/stop" > "$out/stop.stdout" 2> "$out/stop.stderr" &
pid=$!; sleep 8
victim=$(pgrep -f "worker --rank 1 " | head -1); kill -STOP "$victim"
wait $pid; rc=$?; end=$(date +%s%N); kill -KILL "$victim" 2>/dev/null
echo "SIGSTOP at 8 s: exit=$rc after $(( (end - start) / 1000000 )) ms"; tail -3 "$out/stop.stderr"
$B run --min-bytes 16M --max-bytes 4G --step-factor 4 --out "$out/large" 2>&1 | grep -v "^\[rank" | tail -16
