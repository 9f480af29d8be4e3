#!/usr/bin/env bash
# nccl-tests 2.19 creates its communicators with ncclConfig_t.nvlinkCentricSched = 1 (its logs
# print "Comm config nvlinkCentricSched set to 1"); netcheck and torch leave it unset. Does it
# change bus bandwidth? Alternates, 1 KiB-4 GiB x4, check off (timing only):
#   default - netcheck as released
#   unset   - scratch build with the 2.28 config layout, nvlinkCentricSched left unset
#   nvcs1   - scratch build, NETCHECK_SCRATCH_NVCS=1
#   env1    - netcheck as released with NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE=1 (NCCL's
#             environment override of the same setting)
# Usage (repository root): nvcs.sh OUTDIR [ROUNDS]
set -u
out=${1:?outdir}; rounds=${2:-4}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
B=${NETCHECK:-./target/release/netcheck}
S=${NETCHECK_SCRATCH:?path of the scratch build}
lib=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
export NETCHECK_NCCL_LIBRARY=$lib
step() { local name=$1; shift; echo "=== $name $(date -u +%T): $*"; local t0=$(date +%s); "$@" > "$out/$name.txt" 2>&1; echo "exit=$? ($(( $(date +%s) - t0 )) s)"; }
{ date -u; nvidia-smi -L; strings "$lib" | grep -i -E "centric" | head -20; } > "$out/env.txt" 2>&1
sed 's/^check = true/check = false/' bench-configs/default.toml > "$out/nocheck.toml"
common=(--config "$out/nocheck.toml" --min-bytes 1K --max-bytes 4G --step-factor 4)
t_start=$(date +%s)
for i in $(seq 1 "$rounds"); do
  [ $(( $(date +%s) - t_start )) -gt "${BUDGET_S:-400}" ] && { echo "budget reached after $((i - 1)) rounds"; break; }
  step default-$i $B run "${common[@]}" --out "$out/default-$i"
  step unset-$i $S run "${common[@]}" --out "$out/unset-$i"
  NETCHECK_SCRATCH_NVCS=1 step nvcs1-$i $S run "${common[@]}" --out "$out/nvcs1-$i"
  NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE=1 step env1-$i $B run "${common[@]}" --out "$out/env1-$i"
done
for v in default-1 unset-1 nvcs1-1 env1-1; do echo "$v: $(cat "$out/$v"/logs/*.log | grep -o 'Comm config.*' | sort | uniq -c | tr '\n' ';')"; done
