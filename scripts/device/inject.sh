#!/usr/bin/env bash
# The start-up path of `launch --netcheck-image` on a real GPU host (issue 23): do what the init
# container does (copy netcheck into a fresh folder standing for the shared emptyDir, chmod
# 0755), then run `doctor` and a two-simulated-node sweep from that folder, with no netcheck on
# PATH, against the torch wheel's NCCL. Each step is bounded and prints one summary line with
# its exit code. Usage (repository root): [NETCHECK=BINARY] inject.sh OUTDIR
set -u
out=${1:?outdir}; mkdir -p "$out"; out=$(cd "$out" && pwd)
src=${NETCHECK:-./target/release/netcheck}
export NCCL_NVLS_ENABLE=0
wheel=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])' 2>/dev/null)/lib/libnccl.so.2
shared=$(mktemp -d "$out/emptydir.XXXXXX")
step() {
  local name=$1 limit=$2; shift 2
  timeout -s INT -k 10 "$limit" "$@" > "$out/$name.txt" 2>&1
  printf '%-14s exit=%-3s %s\n' "$name" "$?" "$*" | tee -a "$out/summary.txt"
}
# The init container's command, with the emptyDir's mode (world-writable, as the kubelet makes it).
chmod 0777 "$shared"
step copy 30 sh -c "cp '$src' '$shared/netcheck' && chmod 0755 '$shared/netcheck'"
# The pod's PATH has no netcheck: drop every folder that holds one.
path=$(printf '%s' "$PATH" | tr ':' '\n' | while read -r d; do [ -x "$d/netcheck" ] || printf '%s:' "$d"; done)
export PATH=${path%:}
step no-path 10 sh -c '! command -v netcheck'
step glibc 10 sh -c "objdump -T '$shared/netcheck' | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1"
export NETCHECK_NCCL_LIBRARY=$wheel
cd "$shared"
step version 10 ./netcheck --version
step doctor 60 ./netcheck doctor
step sim2x1 240 ./netcheck run --simulate-nodes 2 --gpus-per-node 1 --max-bytes 16M --out "$out/sim2x1"
