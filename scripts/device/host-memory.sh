#!/usr/bin/env bash
# Host staging: the whole largest send built on the host (OLD, up to 4 GiB per rank) against
# one 32 MiB pattern tile and a 64 MiB check buffer (NEW). Alternates the two at 1K-4G x4:
#   *-nocheck-N - timing only; the first point after the collective switch (reduce_scatter 1K
#                 out-of-place) is the one to watch, its timed mean against its sampled p50
#   *-check     - with verification; peak resident memory of netcheck and its workers
#                 (the largest process, from getrusage) and the run time
# Usage (repository root): OLD=... NEW=... host-memory.sh OUTDIR [ROUNDS]
set -u
out=${1:?outdir}; rounds=${2:-3}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
export NETCHECK_NCCL_LIBRARY=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
step() { local name=$1; shift; echo "=== $name $(date -u +%T): $*"; local t0=$(date +%s); "$@" > "$out/$name.txt" 2>&1; echo "exit=$? ($(( $(date +%s) - t0 )) s)"; }
rss() { python3 -c 'import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:]).returncode
print("max resident memory of the largest process: %.0f MiB" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024))
sys.exit(rc)' "$@"; }
date -u > "$out/env.txt"
sed 's/^check = true/check = false/' bench-configs/default.toml > "$out/nocheck.toml"
c=(--step-factor 4 --min-bytes 1K --max-bytes 4G)
for v in old new; do
  b=$OLD; [ $v = new ] && b=$NEW
  step $v-check rss $b run "${c[@]}" --out "$out/$v-check"; tail -1 "$out/$v-check.txt"
done
for i in $(seq 1 "$rounds"); do
  step old-nocheck-$i $OLD run --config "$out/nocheck.toml" "${c[@]}" --out "$out/old-nocheck-$i"
  step new-nocheck-$i $NEW run --config "$out/nocheck.toml" "${c[@]}" --out "$out/new-nocheck-$i"
done
