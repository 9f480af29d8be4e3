#!/usr/bin/env bash
# The real aws-ofi-nccl plugin on a GPU host without EFA (docs/ofi-matrix.md): builds libfabric
# and aws-ofi-nccl from their release tarballs, then runs two simulated nodes sharing the GPU in
# every environment an EFA user meets (the DLC's FI_PROVIDER=efa, libfabric's tcp provider, a
# pinned NCCL_NET, NCCL_NET_PLUGIN by name and by path, the DLC's NCCL_SOCKET_IFNAME, no plugin)
# and checks netcheck's verdict and exit code in each: `run`, `doctor` and `check` must all give
# the case's exit code (they agree with what NCCL did). One line per case, as one-gpu.sh prints.
# Usage (repository root): ofi-matrix.sh OUTDIR
# Env: NETCHECK (binary, default target/release/netcheck), PEERS (folder with
#   libfabric-2.6.0.tar.gz and aws-ofi-nccl-1.21.1.tar.gz; default ../shared/peers),
#   BUILD (build folder, default target/ofi-peers), CASES (space-separated subset), MAX (max bytes).
set -u
out=${1:?outdir}; mkdir -p "$out"; out=$(cd "$out" && pwd)
B=$(realpath "${NETCHECK:-./target/release/netcheck}")
PEERS=$(realpath "${PEERS:-../shared/peers}")
BUILD=${BUILD:-$PWD/target/ofi-peers}; mkdir -p "$BUILD"; BUILD=$(cd "$BUILD" && pwd)
MAX=${MAX:-64M}
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO
wheel=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])' 2>/dev/null)/lib/libnccl.so.2
export NETCHECK_NCCL_LIBRARY=$wheel
LF=$BUILD/lfi OFI=$BUILD/ofii
say() { echo "[ofi-matrix $(date -u +%T)] $*" | tee -a "$out/summary.txt"; }

# 1. The peers, once per machine (about 50 s on 16 cores).
if [ ! -e "$OFI/lib/libnccl-net.so" ]; then
  (
    set -e
    cd "$BUILD"; rm -rf lf ofi
    tar xzf "$PEERS/libfabric-2.6.0.tar.gz"; tar xzf "$PEERS/aws-ofi-nccl-1.21.1.tar.gz"
    cd lf && ./configure --prefix="$LF" --disable-verbs --disable-usnic --disable-psm2 --disable-psm3 \
      --disable-opx --disable-ucx --disable-lpp --disable-cxi && make -j"$(nproc)" install
    cd ../ofi && ./configure --prefix="$OFI" --with-libfabric="$LF" --with-cuda=/usr/local/cuda \
      --disable-tests && make -j"$(nproc)" install
  ) > "$out/build.txt" 2>&1 || { say "peer build failed (see build.txt)"; tail -20 "$out/build.txt"; exit 4; }
fi
{
  date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
  "$B" --version; echo "wheel NCCL: $wheel"; ls -l "$OFI/lib"/*.so*
  LD_LIBRARY_PATH=$LF/lib "$LF/bin/fi_info" --version; LD_LIBRARY_PATH=$LF/lib "$LF/bin/fi_info" -l
  ip -o link 2>/dev/null || ls /sys/class/net
  echo "the plugin's libraries with its own libfabric, then with the system's:"
  LD_LIBRARY_PATH=$OFI/lib:$LF/lib ldd "$OFI/lib/libnccl-net.so" | grep -i fabric
  LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:$OFI/lib ldd "$OFI/lib/libnccl-net.so" | grep -i fabric
  readelf -d "$OFI/lib/libnccl-net.so" | grep -iE "rpath|runpath"
  ls -l /lib/x86_64-linux-gnu/libfabric.so* 2>/dev/null
} > "$out/host.txt" 2>&1

# case NAME EXPECT_RUN_EXIT ENV...: the environment a worker would inherit, then the runs.
# `run` is what decides; `analyze` of the same logs shows what a bare log alone gives.
RESULTS="$out/cases.tsv"; printf 'case\trun_exit\twant\ttransport\tfallback\tnetworks\tanalyze_exit\tdoctor_exit\tcheck_exit\tpeak_busbw\tsec\n' > "$RESULTS"
case_() {
  local name=$1 want=$2; shift 2
  if [ -n "${CASES:-}" ] && [[ " $CASES " != *" $name "* ]]; then return; fi
  local d=$out/$name; mkdir -p "$d"
  printf '%s\n' "$@" > "$d/env.txt"
  local t0; t0=$(date +%s)
  env "$@" timeout -s INT -k 10 150 "$B" run --simulate-nodes 2 --gpus-per-node 1 --timeout 60s \
    --min-bytes 1K --max-bytes "$MAX" --step-factor 4 --out "$d/run" > "$d/run.txt" 2>&1
  local rc=$?
  env "$@" timeout 30 "$B" doctor --format json > "$d/doctor.json" 2> "$d/doctor.err"; local drc=$?
  env "$@" timeout 30 "$B" doctor > "$d/doctor.txt" 2>&1
  env "$@" timeout -s INT -k 10 150 "$B" check --timeout 60s --simulate-nodes 2 --gpus-per-node 1 --max-bytes 1M \
    --out "$d/check" > "$d/check.txt" 2>&1; local crc=$?
  timeout 30 "$B" analyze --format json "$d"/run/logs/*.log > "$d/analyze.json" 2> "$d/analyze.err"; local arc=$?
  timeout 30 "$B" analyze "$d"/run/logs/*.log > "$d/analyze.txt" 2>&1
  local facts
  facts=$(python3 - "$d/run/results.json" "$d/analyze.json" <<'EOF'
import json, sys
def load(p):
    try:
        v = json.load(open(p))
        return v[0] if isinstance(v, list) else v
    except Exception:
        return None
r = load(sys.argv[1]); a = (r or {}).get("analysis") or load(sys.argv[2]) or {}
peak = max([row.get("busbw_gbs") or 0 for row in (r or {}).get("rows", [])] or [0])
print("\t".join([str(a.get("inter_node_transport")), str(a.get("socket_fallback")),
                 ",".join(a.get("networks") or []) or "-", "%.2f" % peak]))
EOF
)
  IFS=$'\t' read -r tr fb nets peak <<< "$facts"
  # run, doctor and check must agree with what NCCL did: the same exit code in every case.
  local ok=ok; [ "$rc" = "$want" ] && [ "$drc" = "$want" ] && [ "$crc" = "$want" ] || ok=MISMATCH
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$want" "$tr" "$fb" "$nets" "$arc" "$drc" "$crc" "$peak" "$(( $(date +%s) - t0 ))" >> "$RESULTS"
  printf '%-22s run=%-3s (want %-3s %-8s) transport=%-8s fallback=%-5s networks=%-10s analyze=%s doctor=%s check=%s peak=%s GB/s\n' \
    "$name" "$rc" "$want" "$ok" "$tr" "$fb" "$nets" "$arc" "$drc" "$crc" "$peak" | tee -a "$out/summary.txt"
}
P="LD_LIBRARY_PATH=$OFI/lib:$LF/lib"
# NCCL's own Socket, no plugin anywhere: TCP was the only option (plain TCP, not a fallback).
case_ socket-plain        0 NCCL_TESTS_UNUSED=1
# No plugin, but the DLC's FI_PROVIDER=efa: an RDMA path was asked for, NCCL ran Socket.
case_ noplugin-fi-efa     1 FI_PROVIDER=efa
# The plugin on LD_LIBRARY_PATH (NCCL opens libnccl-net.so), the DLC's FI_PROVIDER=efa, no device.
case_ ofi-fi-efa          1 "$P" FI_PROVIDER=efa
case_ ofi-fi-efa-rdma     1 "$P" FI_PROVIDER=efa FI_EFA_USE_DEVICE_RDMA=1
case_ ofi-fi-efa-ifname   1 "$P" FI_PROVIDER=efa "NCCL_SOCKET_IFNAME=^lo,docker"
# libfabric's tcp provider under the plugin: TCP under an RDMA name.
case_ ofi-fi-tcp          1 "$P" FI_PROVIDER=tcp
case_ ofi-fi-unset        1 "$P"
# The plugin through NCCL_NET_PLUGIN: by name (libnccl-net-ofi.so) and by absolute path.
case_ netplugin-name-tcp  1 "$P" NCCL_NET_PLUGIN=ofi FI_PROVIDER=tcp
case_ netplugin-path-efa  1 "LD_LIBRARY_PATH=$LF/lib" "NCCL_NET_PLUGIN=$OFI/lib/libnccl-net-ofi.so" FI_PROVIDER=efa
# A pinned network that cannot initialise: NCCL_NET in both spellings aws-ofi-nccl answers to.
case_ pin-aws-libfabric   1 "$P" "NCCL_NET=AWS Libfabric" FI_PROVIDER=efa
case_ pin-libfabric       1 "$P" NCCL_NET=Libfabric FI_PROVIDER=efa
case_ pin-libfabric-tcp   1 "$P" NCCL_NET=Libfabric FI_PROVIDER=tcp
# libfabric's other providers under the plugin (2026-12-07): sockets is TCP too; udp runs
# through the ofi_rxd reliability layer, about 2 ms a call, so run and check reach their 60 s
# deadline; shm reaches only this host's processes, and the plugin asks for remote
# communication, so it finds no provider and NCCL runs Socket.
case_ ofi-fi-sockets      1 "$P" FI_PROVIDER=sockets
case_ ofi-fi-udp          1 "$P" FI_PROVIDER=udp
case_ ofi-fi-shm          1 "$P" FI_PROVIDER=shm
# The plugin's two protocols on libfabric's tcp provider: RDMA finds no eligible provider
# there (plugin init fails, NCCL Socket); SENDRECV is what 1.21 picks for tcp by itself.
case_ ofi-tcp-rdma        1 "$P" FI_PROVIDER=tcp OFI_NCCL_PROTOCOL=RDMA
case_ ofi-tcp-sendrecv    1 "$P" FI_PROVIDER=tcp OFI_NCCL_PROTOCOL=SENDRECV
# The plugin without its own libfabric (2026-12-07): an image whose library path puts the
# distribution's libfabric (Ubuntu 24.04: 1.17) before the one the plugin was built against.
# LD_LIBRARY_PATH is searched before the plugin's RUNPATH; leaving the plugin's libfabric off
# LD_LIBRARY_PATH alone is not enough (the RUNPATH still finds it: 2026-12-07, 23:14 UTC).
S="LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:$OFI/lib"
case_ ofi-system-libfabric      1 "$S" FI_PROVIDER=efa
case_ ofi-system-libfabric-tcp  1 "$S" FI_PROVIDER=tcp
say "done"
