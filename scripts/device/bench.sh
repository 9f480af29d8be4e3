#!/usr/bin/env bash
# The recorded benchmark (docs/benchmarks.md): netcheck beside torch.distributed over the same
# sizes and the same NCCL, the no-flag default, --simulate-nodes with --expect efa, doctor and
# fabric, and nccl-tests when the host has it. Usage (repository root): bench.sh OUTDIR
set -u
out=${1:?outdir}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
B=${NETCHECK:-./target/release/netcheck}
here=$(cd "$(dirname "$0")" && pwd)
wheel=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
step() { local name=$1; shift; echo "=== $name: $*"; local t0=$(date +%s); "$@" > "$out/$name.txt" 2>&1; echo "exit=$? ($(( $(date +%s) - t0 )) s)"; }
{ date -u; nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.nccl.version())'; } > "$out/env.txt" 2>&1

# 1. netcheck and the torch peer, same sizes (1 KiB..4 GiB, x4), same NCCL (the torch wheel's).
NETCHECK_NCCL_LIBRARY=$wheel step netcheck-2.28.9 $B run --min-bytes 1K --max-bytes 4G --step-factor 4 --out "$out/netcheck-2.28.9"
MAX_BYTES=$((1 << 32)) step torch python3 .peer/torch_coll_bench.py "$out/torch.json"
# 2. Again, to see the run-to-run spread.
NETCHECK_NCCL_LIBRARY=$wheel step netcheck-2.28.9-again $B run --min-bytes 1K --max-bytes 4G --step-factor 4 --out "$out/netcheck-2.28.9-again"
# 3. No flags at all: the embedded default sweep with the library netcheck finds itself.
step default $B run --out "$out/default"
# 4. Two simulated nodes: NCCL's network path on one host; --expect efa must fail.
NETCHECK_NCCL_LIBRARY=$wheel step simnodes $B run --simulate-nodes 2 --min-bytes 1K --max-bytes 256M --step-factor 4 --expect efa --out "$out/simnodes"
step analyze-simnodes $B analyze --expect efa "$out/simnodes/logs/rank-0.log" "$out/simnodes/logs/rank-1.log"
# 5. The one-off verdict (doctor + run + analysis + report), on a shorter sweep.
step check $B check --max-bytes 64M --out "$out/check"
# 6. Below NCCL.
bash "$here/fabric-doctor.sh" "$B" "$out/fabric-doctor" > "$out/fabric-doctor.log" 2>&1; echo "fabric-doctor exit=$?"
# 7. nccl-tests, if this host has a build.
bash "$here/nccl_tests_ingest.sh" "$out/nccl-tests" > "$out/nccl-tests.log" 2>&1; echo "nccl-tests exit=$?"
grep -h "netcheck:" "$out"/*.txt | sort | uniq -c | sort -rn | head -20
