#!/usr/bin/env bash
# Device-machine script: real NCCL logs in the shapes that NCCL's and libfabric's own debug
# settings give them (which subsystems print, timestamps on every line, libfabric's log
# interleaved, the quieter debug levels), with and without the real aws-ofi-nccl plugin, and
# netcheck's analysis of each. Two ranks with different NCCL_HOSTIDs share the GPU(s), so
# NCCL takes its network path between them. Usage (repository root): log-shapes.sh OUTDIR
# Env: NETCHECK (binary, default target/release/netcheck); the plugin and libfabric are built
# as ofi-matrix.sh builds them (into target/ofi-peers, once per machine).
set -u
out=${1:?outdir}; mkdir -p "$out/logs"; out=$(cd "$out" && pwd)
B=$(realpath "${NETCHECK:-./target/release/netcheck}")
here=$(cd "$(dirname "$0")" && pwd)
CASES=build-only "$here/ofi-matrix.sh" "$out/peers" > /dev/null 2>&1
LF=$PWD/target/ofi-peers/lfi OFI=$PWD/target/ofi-peers/ofii
[ -e "$OFI/lib/libnccl-net.so" ] || { echo "peer build failed: $out/peers"; exit 4; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 PYTHONUNBUFFERED=1 FAKE_HOSTS=1 WORLD=2
P="LD_LIBRARY_PATH=$OFI/lib:$LF/lib"

printf 'case\texit\tlines\tanalyze_exit\ttransport\tfallback\tverdict\tnodes\tranks\tnetworks\tfindings\n' > "$out/cases.tsv"
# cap NAME ENV...: stdout and stderr of both ranks, as a user pipes them, then the analysis.
cap() {
  local name=$1; shift
  local log=$out/logs/$name.log
  env NCCL_DEBUG=INFO "$@" timeout -s KILL 90 python3 "$here/nccl_log_capture.py" > "$log" 2>&1
  local rc=$?
  timeout 30 "$B" analyze --format json "$log" > "$out/$name.json" 2> "$out/$name.err"
  local arc=$?
  python3 - "$name" "$rc" "$(wc -l < "$log")" "$arc" "$out/$name.json" >> "$out/cases.tsv" <<'EOF'
import json, sys
name, rc, lines, arc, path = sys.argv[1:]
try:
    a = json.load(open(path))
    facts = [a["inter_node_transport"], a["socket_fallback"], a["verdict"], a["nodes"], a["ranks"],
             ",".join(a.get("networks") or []) or "-", ",".join(sorted(f["id"] for f in a["findings"]))]
except Exception as e:
    facts = ["error: %s" % e]
print("\t".join(str(x) for x in [name, rc, lines, arc] + facts))
EOF
  tail -1 "$out/cases.tsv"
}
{ date -u; nvidia-smi -L; "$B" --version; python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())'; } > "$out/host.txt" 2>&1

# NCCL's own Socket between the two "nodes"; then the same in other debug settings.
cap socket
cap socket-subsys-init-net NCCL_DEBUG_SUBSYS=INIT,NET
cap socket-subsys-init-env NCCL_DEBUG_SUBSYS=INIT,ENV
cap socket-subsys-all NCCL_DEBUG_SUBSYS=ALL
cap socket-ts-all NCCL_DEBUG_TIMESTAMP_LEVELS=ALL
cap socket-ts-format NCCL_DEBUG_TIMESTAMP_LEVELS=ALL "NCCL_DEBUG_TIMESTAMP_FORMAT=%FT%T.%3fZ "
cap socket-debug-warn NCCL_DEBUG=WARN
cap socket-debug-version NCCL_DEBUG=VERSION
# The plugin on libfabric's tcp provider, and with libfabric's own log on stderr.
cap ofi-tcp "$P" FI_PROVIDER=tcp
cap ofi-tcp-subsys-init-net "$P" FI_PROVIDER=tcp NCCL_DEBUG_SUBSYS=INIT,NET
cap ofi-tcp-fi-log-warn "$P" FI_PROVIDER=tcp FI_LOG_LEVEL=warn
cap ofi-tcp-fi-log-info "$P" FI_PROVIDER=tcp FI_LOG_LEVEL=info FI_LOG_PROV=tcp
# The DLC's FI_PROVIDER=efa without an EFA device: the plugin fails, NCCL uses Socket.
cap ofi-efa "$P" FI_PROVIDER=efa
cap ofi-efa-fi-log-warn "$P" FI_PROVIDER=efa FI_LOG_LEVEL=warn
cap ofi-efa-subsys-init-env "$P" FI_PROVIDER=efa NCCL_DEBUG_SUBSYS=INIT,ENV
cap ofi-efa-ts-all "$P" FI_PROVIDER=efa NCCL_DEBUG_TIMESTAMP_LEVELS=ALL
