#!/usr/bin/env bash
# Builds the release netcheck with profile-guided optimisation (PGO) of `analyze`, whose hot
# path is branchy byte work that the compiler lays out better once it knows which branches a
# real log takes: an instrumented release build reads a training set, llvm-profdata merges
# what it counted, and the release build is made again with those counts. Output and
# behaviour are the same as the plain release build's; only speed differs (docs/analyze-speed.md,
# "PGO": about a tenth less CPU time on the benchmark log and on the public logs, which are
# not in the training set).
#
#   scripts/build-pgo.sh                  # → target/pgo/netcheck, target/pgo/netcheck.profdata
#
# The training set is this repository's own: every fixture log under tests/fixtures/logs, and
# four 32 MiB logs generated from them by scripts/bench-analyze.sh (NCCL lines only, with
# training output between them, behind Ray's coloured tags, as Docker JSON records).
# Needs rustup's llvm-tools component for llvm-profdata (added when missing).
# Two fat-LTO release builds: about twice the time of one (12-25 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$root/target/pgo-work
out=$root/target/pgo
rm -rf "$work/profiles"
mkdir -p "$work/profiles" "$work/train" "$out"

profdata=$(find "$(rustc --print sysroot)" -name llvm-profdata -type f 2>/dev/null | head -1)
if [[ -z $profdata ]]; then
  rustup component add llvm-tools
  profdata=$(find "$(rustc --print sysroot)" -name llvm-profdata -type f | head -1)
fi
[[ -x $profdata ]] || { echo "error: llvm-profdata not found (rustup component add llvm-tools)" >&2; exit 3; }

echo "1/3 instrumented build..." >&2
RUSTFLAGS="-Cprofile-generate=$work/profiles" cargo build --release --quiet --target-dir "$work/gen"
gen=$work/gen/release/netcheck

echo "2/3 training..." >&2
for form in MIX=0 MIX=4 FORM=ray FORM=json; do
  env "$form" GENERATE_ONLY=1 KEEP=1 BENCH_DIR="$work/train" scripts/bench-analyze.sh 32 >/dev/null
done
# The analyzer exits 1 on a failing verdict and 2 on a log without NCCL lines: not errors here.
for log in "$work"/train/*.log; do
  "$gen" analyze --format json "$log" >/dev/null || true
done
find tests/fixtures/logs -name '*.log' -print0 | while IFS= read -r -d '' log; do
  "$gen" analyze "$log" >/dev/null 2>&1 || true
done
"$profdata" merge -o "$out/netcheck.profdata" "$work/profiles"

echo "3/3 optimised build..." >&2
RUSTFLAGS="-Cprofile-use=$out/netcheck.profdata" cargo build --release --quiet --target-dir "$work/use"
cp "$work/use/release/netcheck" "$out/netcheck"
echo "built $out/netcheck" >&2
