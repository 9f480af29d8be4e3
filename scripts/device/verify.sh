#!/usr/bin/env bash
# Correctness in every dtype and collective, small-size timing, and hang safety, in one call.
# Usage: verify.sh OUTDIR
set -u
out=${1:?outdir}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=${NETCHECK:-./target/release/netcheck}
here=$(cd "$(dirname "$0")" && pwd)
export NETCHECK_NCCL_LIBRARY=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])')/lib/libnccl.so.2
echo "=== every dtype x collective, 1K..256M"
$B run --ops all_gather,reduce_scatter,all_reduce --dtype float32,bfloat16,float16,float64,int8,uint8,int32,uint32,int64,uint64 \
  --min-bytes 1K --max-bytes 256M --step-factor 4 --iters 5 --warmup 2 --out "$out/dtypes" > "$out/dtypes.txt" 2>&1
echo "exit=$?"; grep -E "netcheck:|error" "$out/dtypes.txt" | head
python3 - "$out/dtypes/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rows = r["rows"]; bad = [x for x in rows if x["wrong"] != 0]
print(f"rows {len(rows)}, rows with wrong elements: {len(bad)}, total wrong: {sum(x['wrong'] or 0 for x in rows)}")
for x in bad[:10]: print("  ", x["op"], x["dtype"], x["bytes"], x["in_place"], x["wrong"])
PY
bash "$here/latency.sh" "$out"
bash "$here/hang.sh" "$out"
