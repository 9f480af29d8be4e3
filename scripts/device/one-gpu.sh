#!/usr/bin/env bash
# Every command's first run on a one-GPU host, as a newcomer would type it (issue 14,
# docs/benchmarks.md "One GPU"): run with no flags, check, doctor, fabric, the layout error,
# simulated nodes sharing the GPU beside the torch.distributed peer, the --expect efa failure,
# analyze of the run's own logs, report and gate of its results, Ctrl-C and a killed rank.
# Every step is bounded and prints its exit code and wall time.
# Usage (repository root): [NCCL_TESTS=BUILD_DIR] one-gpu.sh OUTDIR [PEER.py]
set -u
out=${1:?outdir}; mkdir -p "$out"
peer=${2:-}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
B=${NETCHECK:-./target/release/netcheck}
wheel=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])' 2>/dev/null)/lib/libnccl.so.2
# step NAME LIMIT CMD...: output to NAME.txt, exit code and seconds to the summary.
step() {
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s.%N)
  timeout -s INT -k 10 "$limit" "$@" > "$out/$name.txt" 2>&1
  local rc=$?
  printf '%-28s exit=%-3s %6.1f s   %s\n' "$name" "$rc" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')" "$*" | tee -a "$out/summary.txt"
}
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; $B --version; echo "wheel NCCL: $wheel"; } > "$out/host.txt" 2>&1

# 1. What a newcomer types first: the default library, the default sweep (1 KiB - 1 GiB).
step run-default 120 $B run --out "$out/run-default"
step run-gpus1 60 $B run --gpus 1 --max-bytes 64M --out "$out/run-gpus1"
step check-default 180 $B check --out "$out/check-default"
step doctor 30 $B doctor
step doctor-json 30 $B doctor --format json
# 2. The network path on one GPU: the layout error names the flag, then two simulated nodes
#    share the GPU (NET/Socket between two processes), beside torch with one fake host per rank.
step sim2-refused 30 $B run --simulate-nodes 2
export NETCHECK_NCCL_LIBRARY=$wheel
# The one-rank sweep beside nccl-tests (-g 1, same library and sizes) when NCCL_TESTS points at
# its build folder: the per-call times to compare.
step run-1rank-wheel 120 $B run --min-bytes 1K --max-bytes 1G --step-factor 4 --out "$out/run-1rank-wheel"
if [ -n "${NCCL_TESTS:-}" ]; then
  for op in all_gather reduce_scatter; do
    LD_LIBRARY_PATH=$(dirname "$wheel") step nccl-tests-$op-1rank 120 "$NCCL_TESTS/${op}_perf" -b 1K -e 1G -f 4 -g 1
  done
fi
step sim2x1 180 $B run --simulate-nodes 2 --gpus-per-node 1 --min-bytes 1K --max-bytes 256M --step-factor 4 --expect socket --out "$out/sim2x1"
if [ -n "$peer" ]; then
  # The peer takes one GPU per rank; WORLD ranks share GPU 0 here.
  sed -e 's/torch.cuda.set_device(rank)/torch.cuda.set_device(rank % torch.cuda.device_count())/' \
      -e 's/device_id=torch.device("cuda", rank)/device_id=torch.device("cuda", rank % torch.cuda.device_count())/' \
      -e 's/world = torch.cuda.device_count()/world = int(os.environ.get("WORLD", torch.cuda.device_count()))/' \
      "$peer" > "$out/peer.py"
  WORLD=2 FAKE_HOSTS=1 MAX_BYTES=$((1 << 28)) step torch-fakehosts-2 240 python3 "$out/peer.py" "$out/torch-fakehosts-2.json"
  WORLD=1 MAX_BYTES=$((1 << 30)) step torch-1rank 120 python3 "$out/peer.py" "$out/torch-1rank.json"
fi
step sim2x1-efa 120 $B run --simulate-nodes 2 --gpus-per-node 1 --min-bytes 1M --max-bytes 1M --expect efa --out "$out/sim2x1-efa"
step check-sim2x1 180 $B check --simulate-nodes 2 --gpus-per-node 1 --max-bytes 16M --out "$out/check-sim2x1"
# 3. Below NCCL: libfabric's providers and a tcp ping-pong on this host.
step fabric-list 30 $B fabric --list
step fabric-local-tcp 60 $B fabric --local --provider tcp
step fabric-domain-bogus 30 $B fabric --local --provider tcp --domain bogus0
# 4. The run's own files through analyze, report and gate.
step analyze-1rank 30 $B analyze "$out/run-default"/logs/*.log
step analyze-1rank-json 30 $B analyze --format json "$out/run-default"/logs/*.log
step analyze-sim2x1 30 $B analyze --expect socket "$out/sim2x1"/logs/*.log
step report-1rank 60 $B report "$out/run-default/results.json" --out "$out/report-1rank"
step gate-1rank 30 $B gate "$out/run-default/results.json"
if [ -n "${NCCL_TESTS:-}" ]; then
  step ingest-nccl-tests 30 $B ingest "$out/nccl-tests-all_gather-1rank.txt" "$out/nccl-tests-reduce_scatter-1rank.txt" --out "$out/ingested.json"
  step gate-nccl-tests 30 $B gate "$out/ingested.json"
fi
step report-sim2x1 60 $B report "$out/sim2x1/results.json" --out "$out/report-sim2x1"
# 5. Interrupted and killed: Ctrl-C mid-sweep keeps the rows (130); a rank killed -> 124.
$B run --min-bytes 1K --max-bytes 4G --step-factor 2 --iters 200 --out "$out/interrupt" > "$out/interrupt.txt" 2>&1 &
pid=$!; sleep 6; kill -INT $pid; t0=$(date +%s); wait $pid; rc=$?
echo "interrupt: exit=$rc $(( $(date +%s) - t0 )) s after SIGINT, rows kept in results.jsonl: $(wc -l < "$out/interrupt/results.jsonl" 2>/dev/null)" >> "$out/summary.txt"
timeout -s KILL 120 $B run --simulate-nodes 2 --gpus-per-node 1 --min-bytes 1K --max-bytes 4G --iters 100 --timeout 20s --out "$out/killed" > "$out/killed.txt" 2>&1 &
pid=$!; sleep 8; pkill -KILL -f -- "worker --rank 1 .*--out $out/killed"; t0=$(date +%s); wait $pid; rc=$?
echo "killed rank 1: exit=$rc $(( $(date +%s) - t0 )) s after SIGKILL" >> "$out/summary.txt"
cat "$out/summary.txt"
