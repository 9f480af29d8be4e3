#!/usr/bin/env bash
# Device-machine script for issue 23's stack side: with no paths from the user, does the
# binary find the torch wheel's NCCL, say what CUDA the image/driver have, and record the
# stack each rank loaded? Builds nothing: pass a netcheck binary (the glibc-floor one,
# target/floor/netcheck from scripts/build-floor.sh, or `cargo build --release`).
#
# Usage (on the GPU host, from the repository root):
#   scripts/device/stack.sh path/to/netcheck OUTDIR
# About two minutes. Each command's output is OUTDIR/<name>.{txt,json,err}; its exit code the
# last line ("exit=N"). What to look for is printed at the end (OUTDIR/summary.txt).
set -u
bin=${1:?path to a netcheck binary}
out=${2:?output directory}
mkdir -p "$out"

# text NAME TIMEOUT CMD... and json NAME TIMEOUT CMD...: one command's output under $out.
. "$(dirname "${BASH_SOURCE[0]}")/lib/record.sh"

{
  date -u; uname -a
  "$bin" --version
  ldd --version 2>&1 | head -1
  objdump -T "$bin" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1
  python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>&1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  head -1 /proc/driver/nvidia/version 2>&1
  ls /usr/local/cuda*/compat/ 2>&1
  env | grep -E '^(NCCL|FI_|OFI|CUDA|LD_LIBRARY_PATH|VIRTUAL_ENV|CONDA)' | sort
} > "$out/env.txt" 2>&1

# Nothing set by the user: no NETCHECK_NCCL_LIBRARY, NCCL_HOME or LD_LIBRARY_PATH.
clean=(env -u NETCHECK_NCCL_LIBRARY -u NCCL_HOME -u LD_LIBRARY_PATH)
json doctor 120 "${clean[@]}" "$bin" doctor --format json
text doctor 120 "${clean[@]}" "$bin" doctor
# A run with the stack recorded per host; two simulated nodes so the net path is exercised.
text run 300 "${clean[@]}" "$bin" run --max-bytes 64M --out "$out/run"
text run-sim 300 "${clean[@]}" "$bin" run --simulate-nodes 2 --gpus-per-node 1 --max-bytes 16M --out "$out/run-sim"
text report 120 "$bin" report "$out/run-sim/results.json" --out "$out/report"
text gate-min 60 "$bin" gate "$out/run/results.json" --min-nccl 2.20
text gate-too-new 60 "$bin" gate "$out/run/results.json" --min-nccl 9.0
text gate-plugin 60 "$bin" gate "$out/run/results.json" --min-ofi-plugin 1.14

{
  echo "== NCCL libraries doctor found (want the torch wheel, source \"python wheel\"):"
  python3 - "$out/doctor.json" <<'EOF' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
f = d["facts"]
for l in f["nccl_libraries"]:
    print("  ", l["source"], l["path"], l.get("version"), "cuda", l.get("cuda"))
print("== cuda.compat:", [ (c["status"], c["summary"]) for c in d["checks"] if c["id"] == "cuda.compat"])
print("   image CUDA:", f.get("cuda", {}).get("image"), "libcuda:", f.get("cuda", {}).get("libcuda_loaded"))
print("== plugin search:", f["net_plugins"].get("searched", [])[:6], "resolves to", f["net_plugins"].get("resolves_to"))
EOF
  for r in run run-sim; do
    echo "== $r: stack per host (want NCCL version+path, CUDA driver, environment):"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); [print("  ", h["hostname"], json.dumps(h.get("stack"))) for h in r["hosts"]]' "$out/$r/results.json" 2>&1
    grep -h "netcheck: stack:" "$out/$r.txt"
  done
  echo "== report's stack section:"; grep -A3 "Stack (what each node loaded)" "$out/report/summary.md" 2>&1
  echo "== gate: --min-nccl 2.20 (want exit=0), 9.0 (exit=1), --min-ofi-plugin (exit=1: no plugin here):"
  tail -1 "$out/gate-min.txt"; tail -1 "$out/gate-too-new.txt"; tail -1 "$out/gate-plugin.txt"
  grep -h "older than\|no net plugin\|no stack" "$out"/gate-*.txt
} > "$out/summary.txt" 2>&1
cat "$out/summary.txt"
