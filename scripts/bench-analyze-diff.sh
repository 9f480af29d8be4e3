#!/usr/bin/env bash
# Differential check for speed work on `netcheck analyze`: runs an older and a newer binary
# over the fixture logs and over mutated copies of them (glued records, wrapper prefixes, ANSI
# colour codes, CRLF, invalid UTF-8, cut lines, shuffled lines, lines over 1 MiB; whole logs as
# JSON lines, compact or not, a CSV export, a page's HTML or hard-wrapped at a terminal's width)
# and reports every input where stdout, stderr or the exit code differ.
#
# Usage: scripts/bench-analyze-diff.sh OLD_BINARY [NEW_BINARY]   (new: target/release/netcheck)
#   EXTRA_LOGS=dir adds the *.log files of another folder (e.g. a public log corpus).
#   COUNT=n mutated logs (default 400), SEED=n (default 7).
#
# Files with a line over 1 MiB are compared without evidence line numbers: before this
# script existed, such a line was not counted when it had no NCCL in it, so an old binary
# numbers the lines after it one lower.
set -euo pipefail

old=${1:?usage: $0 OLD_BINARY [NEW_BINARY]}
root=$(cd "$(dirname "$0")/.." && pwd)
new=${2:-$root/target/release/netcheck}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

python3 - "$root/tests/fixtures/logs" "${EXTRA_LOGS:-}" "$dir" "${COUNT:-400}" "${SEED:-7}" <<'PY'
import glob, json, random, sys
fixtures, extra, out, count, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
random.seed(seed)
files = sorted(glob.glob(f"{fixtures}/*/*.log")) + (sorted(glob.glob(f"{extra}/*.log")) if extra else [])
corpus = [line for f in files for line in open(f, "rb").read().split(b"\n")]
wrappers = [b"", b"[1,3]<stdout>:", b"3: ", b"[rank3]:", b"(RayTrainWorker pid=12, ip=10.0.0.2) ",
            b"\x1b[36m(RayTrainWorker pid=12, ip=10.0.0.2)\x1b[0m ", b"[pod/w-0/main] ",
            b"  | 2024-05-01T10:00:00.000Z | ", b"host-a: ", b"[2026-01-02 10:24:27] ", b"xx", b"\x1b[1m"]
odd = [b"NCCL INFOx", b"NCCL INFO", b"NCCL WARN", b"nccl", b"libfabric:", b"#", b"NCCL", b" NCCL INFO ",
       b"\xff\xfe", b"\xc3\xa9", b"\r", b"\x1b[0m", b"[repeated 3x across cluster]", b" [0] ", b":1:1 [2] ",
       b"# Rank  0 Group  0 Pid  123 on    node-a device  0 [0x1b] NVIDIA H200", b"NCCL version 2.1.1",
       b"NCCL error", b"collective operation timeout", b"libfabric:123:efa warn", b"NNNN", b"NCCL NCCL INFO"]
def mutate(line):
    r = random.random()
    if r < 0.15: return random.choice(wrappers) + line
    if r < 0.25:
        i = random.randrange(len(line) + 1); return line[:i] + random.choice(odd) + line[i:]
    if r < 0.32: return line[:random.randrange(len(line) + 1)]
    if r < 0.38: return line + b"        " + random.choice(corpus)
    if r < 0.42: return line + b"\r"
    if r < 0.45:
        b = bytearray(line)
        for _ in range(3):
            if b: b[random.randrange(len(b))] = random.randrange(256)
        return bytes(b)
    if r < 0.47: return line.replace(b"NCCL INFO", b"NCCL WARN")
    if r < 0.49: return line.replace(b"node", b"NCCL")
    return line
def as_form(lines):
    # A whole log as a log shipper, a log viewer, a web page or a terminal passes it on; the
    # form goes into the file's name, so a difference says which form it came through.
    form = random.choice(["json", "compact-json", "csv", "html", "wrap"])
    if form.endswith("json"):
        seps = (",", ":") if form == "compact-json" else None
        return [json.dumps({"log": l.decode("utf-8", "replace") + "\n", "stream": "stdout"},
                           separators=seps).encode() for l in lines], form
    if form == "csv":
        return [b'2026-12-06T00:00:00Z,"' + l.replace(b'"', b'""') + b'"' for l in lines], form
    if form == "html":
        return [l.replace(b"&", b"&amp;").replace(b"<", b"&lt;").replace(b">", b"&gt;") for l in lines], form
    width = random.choice([80, 120])
    return [l[i:i + width] for l in lines for i in range(0, max(len(l), 1), width)], form
made = []
for n in range(count):
    start = random.randrange(len(corpus))
    lines = [mutate(l) for l in corpus[start:start + random.choice([5, 20, 100, 400, 2000])]]
    if random.random() < 0.3: random.shuffle(lines)
    form = ""
    if random.random() < 0.25:
        lines, form = as_form(lines)
        form = "-" + form
    data = b"\n".join(lines) + (b"\n" if random.random() < 0.5 else b"")
    made.append(data)
    open(f"{out}/m{n:04d}{form}.log", "wb").write(data)
# Multi-chunk files, some with lines over 64 KiB and over 1 MiB.
for n in range(6):
    parts, size = [], 0
    while size < 3_500_000:
        d = random.choice(made)
        if random.random() < 0.1:
            d = b"y" * random.choice([65535, 65536, 65537, 1048575, 1048576, 1500000, 200000]) + b" NCCL INFO NCCL version 2.9.9\n" + d
        parts.append(d); size += len(d)
    open(f"{out}/big{n}.log", "wb").write(b"\n".join(parts))
PY

checks=0 differences=0
differ() { echo "DIFF: $*"; differences=$((differences + 1)); }
# Compares the two binaries on one argument list (stdout, stderr, exit code).
same() {
  checks=$((checks + 1))
  local a b ra=0 rb=0
  a=$("$old" analyze "$@" 2> "$dir/old.err") || ra=$?
  b=$("$new" analyze "$@" 2> "$dir/new.err") || rb=$?
  [[ $a == "$b" && $ra == "$rb" ]] && cmp -s "$dir/old.err" "$dir/new.err" || differ "$@"
}

fixture_logs=("$root"/tests/fixtures/logs/*/*.log)
extra_logs=()
[[ -n ${EXTRA_LOGS:-} ]] && extra_logs=("$EXTRA_LOGS"/*.log)
for f in "${fixture_logs[@]}"; do
  same "$f"; same --format json "$f"; same --format markdown "$f"; same --expect efa "$f"
done
for f in "${extra_logs[@]}" "$dir"/m*.log; do same --format json "$f"; done
same --format json "${fixture_logs[@]}"
same --format json "$dir"/m00*.log
for f in "$dir"/big*.log; do
  checks=$((checks + 1))
  cmp -s <("$old" analyze --format json "$f" | grep -v '"line": ' || true) \
    <("$new" analyze --format json "$f" | grep -v '"line": ' || true) || differ "(without line numbers) $f"
done
# stdin, plain and gzip
for input in plain gzip; do
  checks=$((checks + 1))
  feed() { if [[ $input == gzip ]]; then gzip -c "${fixture_logs[0]}"; else cat "${fixture_logs[0]}"; fi; }
  cmp -s <(feed | "$old" analyze --format json || true) <(feed | "$new" analyze --format json || true) ||
    differ "stdin ($input)"
done

echo "$checks checks, $differences differences ($old vs $new)"
(( differences == 0 ))
