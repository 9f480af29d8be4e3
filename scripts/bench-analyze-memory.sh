#!/usr/bin/env bash
# Memory bound check for `netcheck analyze`: generates a hostile log with many distinct ranks
# (20 000 processes x 8 devices, each with a version, provider, communicator init, connection
# and environment line) and prints the release binary's time and peak RSS. The analyzer should
# track at most 16 384 ranks and report `input-capped`.
#
# Usage: scripts/bench-analyze-memory.sh [PROCESSES]   (default 20000)
#   NETCHECK_BIN=path measures that binary instead of building target/release/netcheck.
set -euo pipefail

procs=${1:-20000}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

bin=${NETCHECK_BIN:-$root/target/release/netcheck}
[[ -n ${NETCHECK_BIN:-} ]] || (cd "$root" && cargo build --release --quiet)
python3 - "$dir/hostile.log" "$procs" <<'PY'
import sys
path, procs = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    for p in range(procs):
        for d in range(8):
            pre = f"h{p % 500}x:{p}:{p} [{d}] NCCL INFO "
            f.write(pre + f"NCCL version 2.{p % 30}.{d}+cuda12.2\n")
            f.write(pre + f"NET/OFI Selected provider is efa, fabric is efa (found {d} nics)\n")
            f.write(pre + f"ncclCommInitRankConfig comm 0x{p * 8 + d:x} rank {d} nranks 8 cudaDev {d} commId 0x{p:x}{d} - Init START\n")
            f.write(pre + f"Channel 00/0 : {d}[{d}] -> {(d + 1) % 8}[0] [send] via NET/Net{d}x{p % 97}/0\n")
            f.write(pre + f"NCCL_X{d} set by environment to {p}\n")
PY
echo "input: $(du -h "$dir/hostile.log" | cut -f1), $((procs * 8)) distinct ranks"
/usr/bin/time -f "netcheck analyze: %e s, peak RSS %M KiB" \
  "$bin" analyze --format json "$dir/hostile.log" > "$dir/out.json" || true
python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); print("ranks tracked:", len(a["per_rank"]), "findings:", [f["id"] for f in a["findings"]])' "$dir/out.json"
