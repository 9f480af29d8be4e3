#!/usr/bin/env bash
# Device-machine script: real nccl-tests output for `netcheck ingest`, including the -I
# (per-iteration statistics) JSON whose exact nesting the ingest parser could only infer.
# Usage (on the GPU host, from the repository root): scripts/device/nccl_tests_ingest.sh OUTDIR
# Needs nccl-tests binaries: on PATH, in $NCCL_TESTS_DIR/build, or in a usual place below.
set -u
out=${1:?outdir}; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO
bin=""
for d in "${NCCL_TESTS_DIR:-/nonexistent}/build" /opt/nccl-tests/build /usr/local/nccl-tests/build \
         "$HOME/nccl-tests/build" /workspace/nccl-tests/build "$(dirname "$(command -v all_gather_perf 2>/dev/null || echo /x/x)")"; do
  [ -x "$d/all_gather_perf" ] && { bin=$d; break; }
done
if [ -z "$bin" ]; then
  echo "no nccl-tests build found (set NCCL_TESTS_DIR)"; find / -name all_gather_perf -type f 2>/dev/null | head; exit 3
fi
echo "nccl-tests: $bin" | tee "$out/where.txt"
for op in all_gather reduce_scatter; do
  # Text output with NCCL INFO lines mixed in, plus -J; then the same with -I (percentiles).
  timeout 300 "$bin/${op}_perf" -b 1K -e 1G -f 4 -g 2 -w 5 -n 20 -J "$out/$op.json" > "$out/$op.txt" 2>&1
  echo "$op exit=$?" >> "$out/exit.txt"
  timeout 300 "$bin/${op}_perf" -b 1K -e 1G -f 4 -g 2 -w 5 -n 20 -I -J "$out/${op}_I.json" > "$out/${op}_I.txt" 2>&1
  echo "$op -I exit=$?" >> "$out/exit.txt"
done
# A killed run: the text and JSON it leaves behind.
timeout -s KILL 4 "$bin/all_gather_perf" -b 1K -e 8G -f 2 -g 2 -n 200 -J "$out/killed.json" > "$out/killed.txt" 2>&1
echo "killed exit=$?" >> "$out/exit.txt"
# netcheck itself, when it is built here.
nc=target/release/netcheck; [ -x $nc ] || nc=target/debug/netcheck
if [ -x $nc ]; then
  $nc ingest "$out/all_gather.json" "$out/reduce_scatter.json" --out "$out/json.results.json" 2> "$out/ingest-json.err"
  $nc ingest "$out/all_gather.txt" "$out/reduce_scatter.txt" --out "$out/text.results.json" 2> "$out/ingest-text.err"
  $nc ingest "$out/all_gather_I.json" --out "$out/I.results.json" 2> "$out/ingest-I.err"
  $nc ingest "$out/killed.txt" --out "$out/killed-text.results.json" 2> "$out/ingest-killed-text.err"
  $nc ingest "$out/killed.json" --out "$out/killed-json.results.json" 2> "$out/ingest-killed-json.err"
  $nc report "$out/json.results.json" --profile h200x2 --out "$out/report" 2> "$out/report.err"
  $nc gate "$out/json.results.json" --profile h200x2 --junit "$out/junit.xml" --markdown "$out/gate.md" 2> "$out/gate.err"
  echo "gate exit=$?" >> "$out/exit.txt"
  # netcheck's own run, reported and gated the same way, beside nccl-tests for comparison.
  timeout 300 $nc run --out "$out/run" > "$out/run.out" 2> "$out/run.err"
  echo "run exit=$?" >> "$out/exit.txt"
  if [ -f "$out/run/results.json" ]; then
    $nc report "$out/run/results.json" "$out/json.results.json" --profile h200x2 --out "$out/report-both" 2> "$out/report-both.err"
    $nc gate "$out/run/results.json" --profile h200x2 --baseline "$out/json.results.json" --tolerance 15 \
      --baseline-from 1M --markdown "$out/gate-run.md" 2> "$out/gate-run.err"
    echo "gate run-vs-nccl-tests exit=$?" >> "$out/exit.txt"
  fi
fi
ls -la "$out" >&2
