#!/usr/bin/env bash
# Device-machine script for `netcheck doctor` and `netcheck fabric` (issue 6). Builds nothing:
# run it with a release binary built on the development machine (`cargo build --release`).
#
# Usage (on the GPU host, from the repository root):
#   scripts/device/fabric-doctor.sh path/to/netcheck OUTDIR
# Takes about a minute. Every command's output lands in OUTDIR/<name>.{txt,json,err}, its exit
# code in the last line of the .txt/.err file ("exit=N").
set -u
bin=${1:?path to a release netcheck binary}
out=${2:?output directory}
mkdir -p "$out"

# text NAME TIMEOUT CMD... and json NAME TIMEOUT CMD...: one command's output under $out.
. "$(dirname "${BASH_SOURCE[0]}")/lib/record.sh"

{
  date -u; uname -a; nproc
  "$bin" --version
  fi_info --version 2>&1
  ldd "$bin"
  env | grep -E '^(NCCL|FI_|OFI|CUDA|LD_LIBRARY_PATH)' | sort
} > "$out/env.txt" 2>&1

# doctor: the default report, JSON, and strict mode (this host must have 2 GPUs and NCCL).
text doctor 120 "$bin" doctor
json doctor 120 "$bin" doctor --format json
text doctor-strict 120 "$bin" doctor --require gpu,nccl --expect-gpus 2
# No EFA here: requiring it must fail (exit 1) with rdma.devices failing.
text doctor-require-efa 120 "$bin" doctor --require efa

# fabric: providers (libfabric 1.20 there, no EFA device), then two-process ping-pongs.
text fabric-list 60 "$bin" fabric --list
json fabric-list 60 "$bin" fabric --list --format json
text fabric-tcp 180 "$bin" fabric --local --provider tcp
json fabric-tcp 180 "$bin" fabric --local --provider tcp --format json
text fabric-shm 120 "$bin" fabric --local --provider shm
text fabric-efa 60 "$bin" fabric --local --provider efa   # expected: exit 3, no efa provider

# Two-node mode over loopback: a server in the background, a client driving it.
echo "== fabric-server/connect" >&2
timeout -s KILL 120 "$bin" fabric --server --bind 127.0.0.1:18600 --token devtest \
  > "$out/fabric-server.txt" 2>&1 &
server=$!
sleep 1
json fabric-connect 120 "$bin" fabric --connect 127.0.0.1:18600 --provider tcp --token devtest --format json
wait "$server"; echo "exit=$?" >> "$out/fabric-server.txt"

# The peer tool on the same host, same sizes: fi_pingpong's usec/xfer is the mean round trip
# divided by two (compare with netcheck's `rtt mean` / 2).
if command -v fi_pingpong >/dev/null; then
  for size in 64 4096 65536 1048576; do
    echo "== fi_pingpong tcp $size" >&2
    {
      timeout -s KILL 60 fi_pingpong -p tcp -e rdm -I 1000 -S "$size" -B 18617 > /dev/null 2>&1 &
      sleep 0.5
      timeout -s KILL 60 fi_pingpong -p tcp -e rdm -I 1000 -S "$size" -P 18617 127.0.0.1
      echo "exit=$?"
      wait
    } >> "$out/fi_pingpong-tcp.txt" 2>&1
  done
else
  echo "fi_pingpong not installed" > "$out/fi_pingpong-tcp.txt"
fi

grep -H '^exit=' "$out"/*.txt "$out"/*.err >&2
